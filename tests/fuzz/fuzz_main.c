/*
 * tests/fuzz/fuzz_main.c — a tiny stand-in for libFuzzer's driver so any
 * compiler can replay a fuzz corpus: runs LLVMFuzzerTestOneInput over every
 * file in the directories (or files) named on the command line. Used as a
 * regular unit test, so CI exercises fuzz targets on their seed corpus.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			fclose(f);
			return -1;
		}
		len += fread(buf + len, 1, cap - len, f);
		if (len < cap)
			break;
		cap *= 2;
		uint8_t *nb = realloc(buf, cap);
		if (!nb)
			free(buf);
		buf = nb;
	}
	fclose(f);
	/* an exact-size copy so ASan sees reads past the end */
	uint8_t *exact = malloc(len ? len : 1);
	if (exact) {
		memcpy(exact, buf, len);
		LLVMFuzzerTestOneInput(exact, len);
	}
	free(exact);
	free(buf);
	return exact ? 0 : -1;
}

int main(int argc, char **argv)
{
	int files = 0, errors = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			errors += run_file(argv[i]) < 0;
			files++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			return 1;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			errors += run_file(path) < 0;
			files++;
		}
		closedir(d);
	}
	printf("fuzz_main: %d inputs, %d unreadable\n", files, errors);
	return files == 0 || errors ? 1 : 0;
}

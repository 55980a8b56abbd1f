/*
 * ckpt/key.h — the host's checkpoint key: /var/lib/ursa/checkpoint.key (or
 * the file `--key-file` or $URSA_CKPT_KEY names), 32 random bytes,
 * root-only, made at the first checkpoint. It authenticates every checkpoint image made on this
 * host: core.img and each chunk of pages.img (ckpt/seal.h) and the supervisor's state file
 * (actors/checkpointer.c). docs/checkpoint.md, "The key".
 */
#ifndef URSA_CKPT_KEY_H
#define URSA_CKPT_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/err.h"

#define CKPT_KEY_LEN 32
/* the host's key unless $URSA_CKPT_KEY names another file: persistent (a
 * state root on tmpfs would lose it at reboot, and with it every image) */
#define CKPT_KEY_PATH "/var/lib/ursa/checkpoint.key"

/**
 * ckpt_key() - read the host's checkpoint key
 * @create: make the key (and its directory, 0700) when there is none
 *          (checkpoint); else -ENOKEY
 * @key: the key, on success
 * @err: what failed, and where
 *
 * The key is CKPT_KEY_PATH, or the file $URSA_CKPT_KEY names (how `ursa
 * restore --key-file` hands its key to the new supervisor). The file must
 * be a regular file of this uid, mode 0600, of exactly CKPT_KEY_LEN bytes.
 * Concurrent creators agree on one key (made in a temporary file, then
 * linked).
 *
 * Return: 0 or a negative errno.
 */
int ckpt_key(bool create, uint8_t key[CKPT_KEY_LEN], struct urs_err *err);

/**
 * ckpt_key_file() - ckpt_key() for a key file named directly
 * @path: the key file
 * @create: make it (and its directory, 0700) when there is none
 * @key: the key, on success
 * @err: what failed, and where
 *
 * Return: 0 or a negative errno.
 */
int ckpt_key_file(const char *path, bool create, uint8_t key[CKPT_KEY_LEN], struct urs_err *err);

/**
 * ckpt_key_path() - where ckpt_key() looks for the host's key
 * @path: filled
 * @len: its size
 *
 * Return: 0 or -ENAMETOOLONG.
 */
int ckpt_key_path(char *path, size_t len);

#endif

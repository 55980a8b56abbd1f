#!/usr/bin/env bash
# tests/kdoc.sh — every function of the lower layers' headers has a
# kernel-doc comment (passt documents every function): each function
# declared or defined (static inline) at the top level of runtime/*.h,
# net/*.h, state/*.h, ckpt/*.h and store/*.h must have a /** block directly
# above it (nothing but blank space between the two) that
#   - starts with "NAME() - what it does",
#   - names every parameter of the prototype as "@param:" and no other
#     (a variadic "..." may be documented as "@...:" or left out),
#   - has a "Return:" section unless the function returns void.
# Prints "FILE:LINE: NAME(): what is wrong" for each fault. Typedefs,
# function-pointer variables and fields, macros and generated headers
# (they live in the build directory) are not functions here.
# It first proves it can fail: a scratch header with one fault per function
# must be refused function by function, and one with every declaration
# shape the headers use, done right, must pass. Prints one line per check,
# then "N passed, N failed".
set -u
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
dirs="runtime net state ckpt store"

# faults ROOT DIR...: print "FILE:LINE: NAME(): fault" for each fault in ROOT/DIR/*.h
faults() {
	python3 - "$@" <<'PY'
import os
import re
import sys

KW = set('''auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof
static struct switch typedef union unsigned void volatile while bool _Bool _Atomic
_Thread_local _Noreturn _Alignas'''.split())
IDENT = re.compile(r'[A-Za-z_]\w*')


def strip_attrs(s):
    """Drop __attribute__((...)) groups (balanced parentheses)."""
    while True:
        m = re.search(r'__attribute__\s*\(', s)
        if not m:
            return s
        i, d = m.end() - 1, 0
        while i < len(s):
            d += {'(': 1, ')': -1}.get(s[i], 0)
            i += 1
            if d == 0:
                break
        s = s[:m.start()] + ' ' + s[i:]


def split_top(s, sep=','):
    out, d, cur = [], 0, ''
    for c in s:
        if c in '([':
            d += 1
        elif c in ')]':
            d -= 1
        if c == sep and d == 0:
            out.append(cur)
            cur = ''
        else:
            cur += c
    out.append(cur)
    return out


def as_function(text):
    """(name, return part, [param names or None for unnamed], variadic) or None."""
    s = ' '.join(strip_attrs(text).split())
    if not s or s.startswith('typedef ') or re.match(r'(struct|union|enum)\b[^(]*$', s):
        return None
    if '=' in s:
        return None
    p = s.find('(')
    if p < 0:
        return None
    d, q = 0, p
    while q < len(s):
        d += {'(': 1, ')': -1}.get(s[q], 0)
        if d == 0:
            break
        q += 1
    if q >= len(s) or s[q + 1:].strip():
        return None  # a function-pointer variable, an array of them...
    m = re.search(r'([A-Za-z_]\w*)\s*$', s[:p])
    if not m or m.group(1) in KW or s[p + 1:].lstrip().startswith('*'):
        return None
    name, ret = m.group(1), s[:m.start()].strip()
    inner = s[p + 1:q].strip()
    params, variadic = [], False
    if inner and inner != 'void':
        for prm in split_top(inner):
            prm = prm.strip()
            if prm == '...':
                variadic = True
                continue
            if '(' in prm:  # a function pointer or a pointer to an array
                fm = re.search(r'\(\s*\*+\s*(?:const\s+)?([A-Za-z_]\w*)\s*\)', prm)
                params.append(fm.group(1) if fm else None)
                continue
            prm = re.sub(r'(\s*\[[^\]]*\])+\s*$', '', prm)
            toks = re.findall(r'[A-Za-z_]\w*|\*', prm)
            idents = [t for t in toks if t != '*']
            last = toks[-1] if toks else '*'
            if (last == '*' or len(idents) < 2 or last in KW or
                    (len(toks) >= 2 and toks[-2] in ('struct', 'union', 'enum'))):
                params.append(None)
            else:
                params.append(last)
    return name, ret, params, variadic


def check_doc(name, ret, params, variadic, doc):
    """The faults of kernel-doc block @doc for the function."""
    if doc is None:
        return ['no /** kernel-doc block directly above']
    lines = [re.sub(r'^\s*\*?\s?', '', l) for l in doc[3:-2].split('\n')]
    body = [l for l in lines if l.strip()]
    out = []
    if not body or not re.match(re.escape(name) + r'\(\)\s+-\s+\S', body[0].strip()):
        out.append('the block does not start with "%s() - ..."' % name)
    named = re.findall(r'^\s*@([A-Za-z_]\w*|\.\.\.)\s*:', '\n'.join(lines), re.M)
    for i, prm in enumerate(params):
        if prm is None:
            out.append('parameter %d has no name in the prototype' % (i + 1))
    want = [p for p in params if p]
    for p in want:
        if p not in named:
            out.append('@%s: missing' % p)
    for p in named:
        if p == '...' and variadic:
            continue
        if p not in want:
            out.append('@%s: is not a parameter' % p)
    for p in sorted(set(named)):
        if named.count(p) > 1:
            out.append('@%s: documented twice' % p)
    void = re.fullmatch(r'(?:(?:static|inline|extern|_Noreturn|[A-Z][A-Z0-9_]*)\s+)*void', ret)
    if not void and not re.search(r'^\s*Return:', '\n'.join(lines), re.M):
        out.append('no "Return:" section (returns %s)' % ret)
    return out


def scan(text):
    """Yield (line, statement text, doc block or None, is definition)."""
    i, n, line = 0, len(text), 1
    depth = 0  # braces
    stmt, stmt_line, stmt_doc, agg = '', 0, None, False
    last_doc, gap_clean = None, False  # the last comment, and only space since
    bol = True
    while i < n:
        c = text[i]
        if c == '\n':
            line += 1
            bol = True
            if depth == 0:
                stmt += ' ' if stmt else ''
            i += 1
            continue
        if bol and c == '#':  # a preprocessor line, continuations included
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    line += 1
                    i += 1
                i += 1
            last_doc, gap_clean = None, False
            continue
        if c.isspace():
            i += 1
            if depth == 0:
                stmt += ' ' if stmt else ''
            continue
        bol = False
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            com = text[i:j]
            line += com.count('\n')
            i = j
            if depth == 0 and not stmt.strip():
                last_doc, gap_clean = com, True
            continue
        if text.startswith('//', i):
            while i < n and text[i] != '\n':
                i += 1
            continue
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            if depth == 0:
                stmt += text[i:j + 1]
            i = j + 1
            continue
        if depth == 0 and not stmt.strip():
            stmt_line = line
            stmt_doc = last_doc if gap_clean and last_doc.startswith('/**') else None
            last_doc, gap_clean = None, False
            agg = False
        i += 1
        if c == '{':
            if depth == 0 and not agg and as_function(stmt):
                yield stmt_line, stmt, stmt_doc, True
                # skip the body
                d = 1
                while i < n and d:
                    ch = text[i]
                    if ch == '\n':
                        line += 1
                    elif ch in '"\'':
                        j = i + 1
                        while j < n and text[j] != ch:
                            j += 2 if text[j] == '\\' else 1
                        line += text[i:j].count('\n')
                        i = j
                    elif text.startswith('/*', i):
                        j = text.find('*/', i + 2)
                        line += text[i:j].count('\n')
                        i = j + 1
                    elif text.startswith('//', i):
                        while i + 1 < n and text[i + 1] != '\n':
                            i += 1
                    elif ch == '{':
                        d += 1
                    elif ch == '}':
                        d -= 1
                    i += 1
                stmt = ''
                continue
            if depth == 0:
                agg = True
            depth += 1
            continue
        if c == '}':
            depth -= 1
            continue
        if depth:
            continue
        if c == ';':
            if not agg:
                yield stmt_line, stmt, stmt_doc, False
            stmt = ''
            continue
        stmt += c


root, dirs = sys.argv[1], sys.argv[2:]
for d in dirs:
    path = os.path.join(root, d)
    if not os.path.isdir(path):
        continue
    for f in sorted(os.listdir(path)):
        if not f.endswith('.h'):
            continue
        rel = os.path.join(d, f)
        with open(os.path.join(root, rel), encoding='utf-8') as fh:
            text = fh.read()
        for line, stmt, doc, is_def in scan(text):
            fn = as_function(stmt)
            if not fn:
                continue
            name, ret, params, variadic = fn
            for fault in check_doc(name, ret, params, variadic, doc):
                print('%s:%d: %s(): %s' % (rel, line, name, fault))
PY
}

passed=0 failed=0
scratch=$(mktemp -d /tmp/ursa-kdoc.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/runtime" "$scratch/store"
# one fault per function: bad_NAME is the function that must be named
cat >"$scratch/runtime/bad.h" <<'EOF'
#ifndef BAD_H
#define BAD_H
struct urs_err;
int bad_undocumented(int fd);

/* a plain comment is not a kernel-doc block */
int bad_plain(int fd);

/**
 * bad_not_above() - a block with a declaration between it and the function
 * @fd: a file
 *
 * Return: 0.
 */
struct bad_between;
int bad_not_above(int fd);

/**
 * bad_wrong_name() - a block whose parameter is misspelt
 * @fdd: a file
 *
 * Return: 0.
 */
int bad_wrong_name(int fd);

/**
 * bad_missing() - a block that leaves a parameter out
 * @fd: a file
 *
 * Return: 0.
 */
int bad_missing(int fd, struct urs_err *err);

/**
 * bad_extra() - a block with a parameter the prototype lacks
 * @fd: a file
 * @err: gone from the prototype
 *
 * Return: 0.
 */
int bad_extra(int fd);

/**
 * bad_other() - a block copied from another function
 * @fd: a file
 *
 * Return: 0.
 */
int bad_named_other(int fd);

/**
 * bad_no_return() - a block without a Return: section
 * @fd: a file
 */
int bad_no_return(int fd);

/**
 * bad_fnptr() - a block that misses a function-pointer parameter
 * @fd: a file
 *
 * Return: 0.
 */
int bad_fnptr(int fd, void (*done)(void *arg, int res));

/**
 * bad_array() - a block that misses an array parameter
 * @p: bytes
 */
void bad_array(const void *p, unsigned char out[32]);

/**
 * bad_unnamed() - a prototype whose parameter has no name
 *
 * Return: 0.
 */
int bad_unnamed(struct urs_err *);

/**
 * bad_twice() - a block that names a parameter twice
 * @fd: a file
 * @fd: again
 *
 * Return: 0.
 */
int bad_twice(int fd);

static inline int bad_inline(int fd)
{
	return fd;
}

/**
 * bad_multiline() - a prototype over several lines, one parameter missed
 * @root: the root
 * @id: the id
 *
 * Return: 0.
 */
__attribute__((format(printf, 3, 4))) int bad_multiline(const char *root, const char *id,
							 const char *fmt, ...);
#endif
EOF
planted=$(grep -oE '\bbad_[a-z_]+\(' "$scratch/runtime/bad.h" | sed 's/($//' | grep -v '^bad_other$' | sort -u)
# every shape the headers use, documented right: no fault
cat >"$scratch/store/good.h" <<'EOF'
#ifndef GOOD_H
#define GOOD_H
#include <stdint.h>
#define GOOD_MACRO(x)                                \
	do {                                         \
		int macro_not_a_function(int y);     \
	} while (0)
struct good_loop;
typedef void (*good_cb)(struct good_loop *loop, int res);
typedef int good_fn(int fd);
extern void (*good_hook)(struct good_loop *loop, int res);
extern _Thread_local struct good_loop *good_tls;
struct good {
	int (*replace)(void *ctx, const uint64_t *insns, uint32_t len, const uint64_t **out);
	uint8_t (*macs)[32];
	char name[16];
};
enum good_kind { GOOD_A = 1, GOOD_B };

/**
 * good_init() - a plain prototype
 * @loop: the loop
 * @cb: called once
 * @macs: a pointer to arrays
 * @out: an array parameter
 * @hook: a function-pointer parameter
 */
void good_init(struct good_loop *loop, good_cb cb, const uint8_t (*macs)[32], uint8_t out[32],
	       void (*hook)(void *arg, int blocking));

/**
 * good_void() - no parameters
 *
 * Return: a number.
 */
unsigned good_void(void);

/**
 * good_set() - a variadic function with an attribute in front
 * @err: the error
 * @rc: returned
 * @fmt: the format
 *
 * Return: @rc.
 */
__attribute__((format(printf, 3, 4))) static inline int good_set(struct good *err, int rc,
								 const char *fmt, ...)
{
	if (err) {
		const char *s = "}{ not a brace";
		(void) s;
	}
	return rc;
}

/**
 * good_ptr() - a pointer result, one parameter
 * @g: the thing
 *
 * Return: its name.
 */
static inline const char *good_ptr(const struct good *g)
{
	return g->name;
}
#endif
EOF
got_bad=$(faults "$scratch" runtime | sed -E 's/^[^ ]+ ([a-z_]+)\(\).*/\1/' | sort -u)
got_good=$(faults "$scratch" store)
if [ "$got_bad" = "$planted" ] && [ -z "$got_good" ]; then
	passed=$((passed + 1))
	echo "ok    the check refuses each of $(wc -l <<<"$planted") planted faults and passes a good header"
else
	failed=$((failed + 1))
	echo "FAIL  the check does not see what was planted"
	echo "      planted: $(echo $planted)"
	echo "      refused: $(echo $got_bad)"
	[ -z "$got_good" ] || sed 's/^/      good.h: /' <<<"$got_good"
fi
v=$(faults "$src" $dirs)
if [ -z "$v" ]; then
	passed=$((passed + 1)) && echo "ok    every function in the headers of $(for d in $dirs; do printf '%s/ ' "$d"; done)has its kernel-doc"
else
	failed=$((failed + 1)) && echo "FAIL  functions without a matching kernel-doc block:" && sed 's/^/      /' <<<"$v"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

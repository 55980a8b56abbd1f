#!/usr/bin/env python3
# tests/state/test_gen.py — tests of the generator itself: its output for
# tests/state/tst.ursc must equal the golden files in tests/state/golden/
# (regenerate with --update after a deliberate change), and malformed
# schemas must be refused with a message naming the line.
#
#   test_gen.py URSC_PY TESTS_STATE_DIR [--update]
import os
import subprocess
import sys
import tempfile

BAD = {
    'unknown type': 'struct a {\n\tptr nothere p;\n}\n',
    'embeds itself': 'struct a {\n\tstruct b x;\n}\nstruct b {\n\tstruct a y;\n}\n',
    'twice': 'struct a {\n\tu32 x;\n\tu32 x;\n}\n',
    'more than 64': 'struct a {\n' + ''.join('\tu8 f%d;\n' % i for i in range(65)) + '}\n',
    'must end with': 'struct a {\n\tu32 x\n}\n',
    'unterminated': 'struct a {\n\tu32 x;\n',
    'not a struct': 'union u { nothere }\n',
    'use "bytes"': 'struct a {\n\tvec u8 x;\n}\n',
    'map keys': 'struct a {\n\tmap u32 u64 m;\n}\n',
    'map key size': 'struct a {\n\tmap bytes[0] u64 m;\n}\n',
    'map key size out': 'struct a {\n\tmap bytes[1025] u64 m;\n}\n',
    'map values': 'struct a {\n\tmap string i32 m;\n}\n',
}


def main():
    gen, tdir = sys.argv[1], sys.argv[2]
    update = '--update' in sys.argv
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        h, c = os.path.join(tmp, 'tst_types.h'), os.path.join(tmp, 'tst_codec.c')
        subprocess.run([sys.executable, gen, os.path.join(tdir, 'tst.ursc'), h, c], check=True)
        for out in (h, c):
            gold = os.path.join(tdir, 'golden', os.path.basename(out) + '.golden')
            got = open(out).read()
            if update:
                open(gold, 'w').write(got)
                continue
            if got != open(gold).read():
                print('FAIL golden: %s differs from %s' % (out, gold))
                fails += 1
            else:
                print('ok golden %s' % os.path.basename(gold))
        for want, text in BAD.items():
            src = os.path.join(tmp, 'bad.ursc')
            open(src, 'w').write(text)
            r = subprocess.run([sys.executable, gen, src, h, c], capture_output=True, text=True)
            if r.returncode == 0 or want not in r.stderr or 'bad.ursc:' not in r.stderr:
                print('FAIL bad schema (%s): rc=%d %s' % (want, r.returncode, r.stderr.strip()))
                fails += 1
            else:
                print('ok refused: %s' % r.stderr.strip())
    print('%d failures' % fails)
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
# state/gen/ursc.py — the checkpoint-state code generator. Reads a schema
# (.ursc) and writes NAME_types.h (the C structs, type indices, prototypes)
# and NAME_codec.c (one straight-line save/load function per type plus
# the schema descriptor the stream's type table is written from). Run by
# meson at build time; grammar and wire format: docs/state-format.md.
#
#   ursc.py SCHEMA.ursc OUT_TYPES_H OUT_CODEC_C
import os
import re
import sys

SCALARS = {
    # name: (base code, C type, varint max / (min,max) for signed, kind)
    'u8': (1, 'uint8_t', 'UINT8_MAX', 'u'),
    'u16': (2, 'uint16_t', 'UINT16_MAX', 'u'),
    'u32': (3, 'uint32_t', 'UINT32_MAX', 'u'),
    'u64': (4, 'uint64_t', None, 'u'),
    'i8': (5, 'int8_t', ('INT8_MIN', 'INT8_MAX'), 'i'),
    'i16': (6, 'int16_t', ('INT16_MIN', 'INT16_MAX'), 'i'),
    'i32': (7, 'int32_t', ('INT32_MIN', 'INT32_MAX'), 'i'),
    'i64': (8, 'int64_t', None, 'i'),
    'bool': (9, 'bool', '1', 'b'),
    'f64': (10, 'double', None, 'f'),
}
B_PTR, B_REF, B_STRUCT, B_UNION = 16, 17, 18, 19
F_SCALAR, F_ARRAY, F_VEC, F_BYTES, F_STRING, F_MAP, F_CUSTOM = 1, 2, 3, 4, 5, 6, 7
MAP_KMAX = 1024  # URS_ST_MAP_KMAX
MAX_PATH = 8  # URS_ST_MAX_PATH


class SchemaError(Exception):
    pass


CPREFIX = ['']  # `cprefix P` in a schema: C names get P, wire names do not


def cn(name):
    return CPREFIX[0] + name


class Field:
    def __init__(self, name, line):
        self.name = name
        self.line = line
        self.form = F_SCALAR
        self.base = None  # scalar name, 'ptr', 'ref', 'struct', 'union'
        self.target = None  # type name (ptr/struct/union/ref-to-struct) or scalar (ref)
        self.count = 0
        self.nosave = False
        self.custom = None  # (ctype, save, load)
        self.ctext = None  # nosave: raw C type text
        self.mapkey = 0  # maps: 0 = u64, N = N raw bytes, 'str' = string


class Type:
    def __init__(self, name, is_union, line):
        self.name = name
        self.is_union = is_union
        self.line = line
        self.fields = []
        self.variants = []
        self.hooks = {}
        self.index = -1


def parse(text, path):
    types = []
    byname = {}
    cur = None
    lines = text.split('\n')
    for ln, raw in enumerate(lines, 1):
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        where = '%s:%d' % (path, ln)
        if cur is None and line.startswith('cprefix '):
            CPREFIX[0] = line.split()[1]
            continue
        if cur is None:
            m = re.match(r'^(struct|union)\s+([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*\{\s*(.*)$', line)
            if not m:
                raise SchemaError('%s: expected "struct NAME {" or "union NAME {"' % where)
            kind, name, attrs, rest = m.groups()
            if name in byname:
                raise SchemaError('%s: type %s defined twice' % (where, name))
            cur = Type(name, kind == 'union', where)
            if attrs:
                for a in attrs[1:-1].split(','):
                    a = a.strip()
                    am = re.match(r'^(before_save|after_load)\s*=\s*([A-Za-z_]\w*)$', a)
                    if not am:
                        raise SchemaError('%s: unknown attribute %r' % (where, a))
                    cur.hooks[am.group(1)] = am.group(2)
            byname[name] = cur
            types.append(cur)
            line = rest.strip()
            if not line:
                continue
        if cur.is_union:
            body = line
            close = body.endswith('}')
            if close:
                body = body[:-1]
            for v in re.split(r'[\s,;]+', body.strip()):
                if v:
                    cur.variants.append(v)
            if close:
                cur = None
            continue
        if line == '}' or line == '};':
            cur = None
            continue
        if not line.endswith(';'):
            raise SchemaError('%s: field must end with ";"' % where)
        cur.fields.append(parse_field(line[:-1].strip(), where))
    if cur is not None:
        raise SchemaError('%s: unterminated %s' % (cur.line, cur.name))
    resolve(types, byname)
    return types, byname


def parse_field(s, where):
    nosave = False
    if s.startswith('nosave '):
        nosave = True
        s = s[7:].strip()
    m = re.match(r'^custom\(\s*([^,]+?)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)\s+([A-Za-z_]\w*)$', s)
    if m:
        f = Field(m.group(4), where)
        f.form = F_CUSTOM
        f.custom = (m.group(1), m.group(2), m.group(3))
        f.nosave = nosave
        return f
    m = re.match(r'^(.*?)\s*([A-Za-z_]\w*)\s*(\[\s*(\d+)\s*\])?$', s)
    if not m:
        raise SchemaError('%s: cannot parse field %r' % (where, s))
    tspec, name, _, count = m.groups()
    f = Field(name, where)
    f.nosave = nosave
    toks = tspec.split()
    if not toks:
        raise SchemaError('%s: field %s has no type' % (where, name))
    if toks[0] == 'vec':
        f.form = F_VEC
        toks = toks[1:]
    elif toks[0] == 'bytes' and len(toks) == 1:
        f.form = F_BYTES
        toks = []
    elif toks[0] == 'string' and len(toks) == 1:
        f.form = F_STRING
        toks = []
    elif toks[0] == 'map':
        km = re.match(r'^bytes\[\s*(\d+)\s*\]$', toks[1]) if len(toks) >= 3 else None
        if len(toks) >= 3 and toks[1] == 'u64':
            f.mapkey = 0
        elif len(toks) >= 3 and toks[1] == 'string':
            f.mapkey = 'str'
        elif km:
            f.mapkey = int(km.group(1))
            if f.mapkey < 1 or f.mapkey > MAP_KMAX:
                raise SchemaError('%s: map key size out of range (1..%d)' % (where, MAP_KMAX))
        else:
            raise SchemaError('%s: map keys must be u64, bytes[N] or string '
                              '("map u64 VALUE name")' % where)
        f.form = F_MAP
        toks = toks[2:]
    if count is not None:
        if f.form != F_SCALAR:
            raise SchemaError('%s: %s: only plain fields can be fixed arrays' % (where, name))
        f.form = F_ARRAY
        f.count = int(count)
        if f.count < 1 or f.count > (1 << 20):
            raise SchemaError('%s: %s: array length out of range' % (where, name))
    if f.form in (F_BYTES, F_STRING):
        return f
    if len(toks) == 1 and toks[0] in SCALARS:
        f.base = toks[0]
    elif len(toks) == 2 and toks[0] in ('ptr', 'struct', 'union'):
        f.base, f.target = toks
    elif len(toks) == 2 and toks[0] == 'ref':
        f.base, f.target = 'ref', toks[1]
    else:
        raise SchemaError('%s: unknown type %r' % (where, tspec))
    if f.form == F_MAP and f.base not in ('ptr',) and f.base not in ('u64', 'i64', 'u32'):
        raise SchemaError('%s: map values are u64, i64, u32 or ptr T' % where)
    if f.form == F_VEC and f.base == 'u8':
        raise SchemaError('%s: use "bytes" for a counted u8 array' % where)
    return f


def resolve(types, byname):
    for i, t in enumerate(types):
        t.index = i
    for t in types:
        if t.is_union:
            if not t.variants:
                raise SchemaError('%s: union %s has no variants' % (t.line, t.name))
            for v in t.variants:
                if v not in byname or byname[v].is_union:
                    raise SchemaError('%s: union %s: variant %s is not a struct' %
                                      (t.line, t.name, v))
            continue
        saved = [f for f in t.fields if not f.nosave]
        if len(saved) > 64:
            raise SchemaError('%s: %s has more than 64 saved fields' % (t.line, t.name))
        names = set()
        for f in t.fields:
            if f.name in names:
                raise SchemaError('%s: field %s twice' % (f.line, f.name))
            names.add(f.name)
            if f.base in ('ptr', 'struct', 'union'):
                tt = byname.get(f.target)
                if tt is None:
                    raise SchemaError('%s: unknown type %s' % (f.line, f.target))
                if (f.base == 'union') != tt.is_union:
                    raise SchemaError('%s: %s is %s union' %
                                      (f.line, f.target, 'not a' if f.base == 'union' else 'a'))
            if f.base == 'ref' and f.target not in SCALARS:
                tt = byname.get(f.target)
                if tt is None or tt.is_union:
                    raise SchemaError('%s: ref target %s is not a scalar or struct' %
                                      (f.line, f.target))
    # embedded structs must not recurse; order definitions so embeds come first
    order, state = [], {}

    def visit(t, chain):
        if state.get(t.name) == 2:
            return
        if state.get(t.name) == 1:
            raise SchemaError('%s: %s embeds itself (%s)' % (t.line, t.name, ' -> '.join(chain)))
        state[t.name] = 1
        for f in t.fields:
            if f.base in ('struct', 'union') and f.form in (F_SCALAR, F_ARRAY):
                visit(byname[f.target], chain + [f.target])
        state[t.name] = 2
        order.append(t)

    for t in types:
        visit(t, [t.name])
    return order


def ref_code(f, byname):
    if f.target in SCALARS:
        return str(SCALARS[f.target][0])
    return 'URS_ST_REF_TYPE + %d' % byname[f.target].index


def base_code(f):
    if f.form in (F_BYTES, F_STRING, F_CUSTOM):
        return 0
    if f.base in SCALARS:
        return SCALARS[f.base][0]
    return {'ptr': B_PTR, 'ref': B_REF, 'struct': B_STRUCT, 'union': B_UNION}[f.base]


def elem_ctype(f):
    if f.base in SCALARS:
        return SCALARS[f.base][1]
    if f.base == 'ptr':
        return 'struct %s *' % cn(f.target)
    if f.base == 'ref':
        return (SCALARS[f.target][1] + ' *') if f.target in SCALARS else 'struct %s *' % cn(f.target)
    return 'struct %s ' % cn(f.target)


def c_decl(f):
    if f.form == F_CUSTOM:
        return ['%s %s;' % (f.custom[0], f.name)]
    if f.form == F_BYTES:
        return ['uint8_t *%s;' % f.name, 'uint32_t %s_len;' % f.name]
    if f.form == F_STRING:
        return ['char *%s;' % f.name]
    if f.form == F_MAP:
        kind = {0: 'urs_map', 'str': 'urs_smap'}.get(f.mapkey, 'urs_bmap')
        return ['struct %s %s;' % (kind, f.name)]
    et = elem_ctype(f)
    et = et if et.endswith('*') else et.rstrip() + ' '
    if f.form == F_VEC:
        return ['%s*%s;' % (et, f.name), 'uint32_t %s_len;' % f.name]
    if f.form == F_ARRAY:
        return ['%s%s[%d];' % (et, f.name, f.count)]
    return ['%s%s;' % (et, f.name)]


def gen_header(mod, types, order, byname, src):
    g = 'URSA_GEN_%s_TYPES_H' % mod.upper()
    o = ['/*', ' * %s_types.h — generated by state/gen/ursc.py from %s; do not edit.' % (mod, src),
         ' * The C types of the schema, their type indices and the save/load entry',
         ' * points (state/codec.h has the run time).', ' */',
         '#ifndef %s' % g, '#define %s' % g, '', '#include <stdbool.h>', '#include <stdint.h>',
         '', '#include "state/codec.h"', '']
    for t in types:
        o.append('struct %s;' % cn(t.name))
    o.append('')
    o.append('enum {')
    for t in types:
        o.append('\t%s_T_%s = %d,' % (mod.upper(), t.name.upper(), t.index))
    o.append('\t%s_NTYPES = %d,' % (mod.upper(), len(types)))
    o.append('};')
    o.append('')
    for t in order:
        if t.is_union:
            o.append('enum {')
            o.append('\t%s_NONE = 0,' % cn(t.name).upper())
            for i, v in enumerate(t.variants, 1):
                o.append('\t%s_%s = %d,' % (cn(t.name).upper(), v.upper(), i))
            o.append('};')
            o.append('struct %s {' % cn(t.name))
            o.append('\tuint32_t tag;')
            o.append('\tunion {')
            o.append('\t\tvoid *ptr;')
            for v in t.variants:
                o.append('\t\tstruct %s *%s;' % (cn(v), v))
            o.append('\t};')
            o.append('};')
            o.append('')
            continue
        o.append('struct %s {' % cn(t.name))
        for f in t.fields:
            for d in c_decl(f):
                o.append('\t' + d)
        o.append('};')
        o.append('')
    for t in types:
        for h in ('before_save', 'after_load'):
            if h in t.hooks:
                o.append('void %s(struct %s *obj);' % (t.hooks[h], cn(t.name)))
        for f in t.fields:
            if f.form == F_CUSTOM:
                o.append('uint64_t %s(const %s *v);' % (f.custom[1], f.custom[0]))
                o.append('void %s(%s *v, uint64_t x);' % (f.custom[2], f.custom[0]))
    o.append('')
    o.append('extern const struct urs_st_schema %s_schema;' % mod)
    o.append('')
    for t in types:
        if t.is_union:
            continue
        o.append('static inline int %s_save_%s(struct urs_st_enc *e, const struct %s *root)' %
                 (mod, t.name, cn(t.name)))
        o.append('{')
        o.append('\treturn urs_st_save(e, &%s_schema, %s_T_%s, root);' %
                 (mod, mod.upper(), t.name.upper()))
        o.append('}')
        o.append('')
        o.append('/* @dst non-NULL: decode the root into it; else *@out = arena copy */')
        o.append('static inline int %s_load_%s(struct urs_st_dec *d, const void *buf, size_t len,'
                 % (mod, t.name))
        o.append('\t\t\t\tstruct %s *dst, struct %s **out)' % (cn(t.name), cn(t.name)))
        o.append('{')
        o.append('\treturn urs_st_load(d, &%s_schema, %s_T_%s, buf, len, dst, (void **) out);' %
                 (mod, mod.upper(), t.name.upper()))
        o.append('}')
        o.append('')
    o.append('#endif')
    return '\n'.join(o) + '\n'


class CodeGen:
    def __init__(self, mod, types, byname):
        self.idt = False  # the save function being generated keeps `idt`
        self.mod = mod
        self.types = types
        self.byname = byname

    def tidx(self, name):
        return '%s_T_%s' % (self.mod.upper(), name.upper())

    # ---- save side
    def present(self, f, x):
        if f.form == F_SCALAR:
            if f.base in ('struct',):
                return '1'
            if f.base == 'union':
                return '%s.tag != 0' % x
            if f.base == 'f64':
                return 'urs_st_f64bits(%s) != 0' % x
            if f.base in ('ptr', 'ref'):
                return '%s != NULL' % x
            return '%s != 0' % x
        if f.form == F_ARRAY:
            if f.base in ('struct', 'union'):
                return '1'
            return '!urs_st_allzero(%s, sizeof(%s))' % (x, x)
        if f.form in (F_VEC, F_BYTES):
            return '%s_len != 0' % x
        if f.form == F_STRING:
            return '%s != NULL' % x
        if f.form == F_MAP:
            return '%s.len != 0' % x
        if f.form == F_CUSTOM:
            return 'cv_%s != 0' % f.name
        raise AssertionError

    # Largest encoding of one element (varint of the C type, ptr = u32 ID,
    # ref = its 1-byte marker); 0 = not fixed-size (struct, union).
    def maxb(self, f):
        if f.base in SCALARS:
            return {'u8': 2, 'u16': 3, 'u32': 5, 'u64': 10, 'i8': 2, 'i16': 3, 'i32': 5,
                    'i64': 10, 'bool': 1, 'f64': 8}[f.base]
        if f.base == 'ptr':
            return 5
        if f.base == 'ref':
            return 1
        return 0

    def fixed_size(self, f):
        """Max bytes of a field written inside a reserved run, or None when
        the field is written with its own room checks (then .prefix bytes of
        it, its length, still belong to the run)."""
        if f.form == F_SCALAR and self.maxb(f):
            return self.maxb(f)
        if f.form == F_CUSTOM:
            return 10
        if f.form == F_ARRAY and self.maxb(f):
            n = f.count if f.base == 'u8' else self.maxb(f) * f.count
            return n if n <= 1024 else None
        return None

    def prefix_size(self, f):
        return 5 if f.form in (F_VEC, F_BYTES, F_STRING, F_MAP) else 0

    def put(self, f, x, ind):
        """Write one element with the local cursor p (room reserved)."""
        b = f.base
        if b in SCALARS:
            k = SCALARS[b][3]
            if k == 'u' or k == 'b':
                return ['%sp = urs_st_uv(p, (uint64_t) %s);' % (ind, x)]
            if k == 'i':
                return ['%sp = urs_st_uv(p, urs_st_zz(%s));' % (ind, x)]
            return ['%sp = urs_st_f64(p, %s);' % (ind, x)]
        if b == 'ptr':
            return ['%sp = urs_st_uv(p, urs_st_enc_idl(e, &idt, %s, %s));' %
                    (ind, x, self.tidx(f.target))]
        if b == 'ref':
            return ['%s*p++ = %s != NULL;' % (ind, x),
                    '%surs_st_enc_ref(e, %s, %s);' % (ind, x, ref_code(f, self.byname))]
        raise AssertionError

    def call_out(self, call, ind):
        """An out-of-line writer: sync the cursor, call, reload."""
        r = ['%se->p = p;' % ind, '%s%s;' % (ind, call), '%sp = e->p;' % ind,
             '%send = e->end;' % ind]
        if self.idt:
            r.append('%sidt = urs_st_idt_of(e);' % ind)
        return r

    def put_nested(self, f, x, ind):
        if f.base == 'struct':
            return self.call_out('%s_save(e, &%s)' % (f.target, x), ind)
        return self.call_out('urs_st_save_union(e, %s, %s.tag, %s.ptr)' %
                             (self.tidx(f.target), x, x), ind)

    def save_field(self, f, x, ind):
        """Code for field f when present. Fixed-size fields and the length
        prefix of variable ones are written into the room the run reserved."""
        o = []
        mb = self.maxb(f)
        if f.form == F_SCALAR:
            if mb:
                o += self.put(f, x, ind)
            else:
                o += self.put_nested(f, x, ind)
        elif f.form == F_ARRAY:
            if f.base == 'u8':
                if self.fixed_size(f) is not None:
                    o.append('%smemcpy(p, %s, %d);' % (ind, x, f.count))
                    o.append('%sp += %d;' % (ind, f.count))
                else:
                    o += self.call_out('urs_st_put_raw(e, %s, %d)' % (x, f.count), ind)
            elif mb:
                start = '0'
                if f.base == 'u32' and f.count >= 8:
                    # eight at a time (room: 8 × 5 bytes + slack either way)
                    o.append('%sfor (uint32_t i = 0; i + 8 <= %d; i += 8) {' % (ind, f.count))
                    if self.fixed_size(f) is None:
                        o.append('%s\tURS_ST_NEED(40 + URS_ST_SLACK);' % ind)
                    o.append('%s\tp = urs_st_uv_u32x8(p, &%s[i]);' % (ind, x))
                    o.append('%s}' % ind)
                    start = str(f.count // 8 * 8)
                if start != str(f.count):
                    o.append('%sfor (uint32_t i = %s; i < %d; i++) {' % (ind, start, f.count))
                    if self.fixed_size(f) is None:
                        o.append('%s\tURS_ST_NEED(%d + URS_ST_SLACK);' % (ind, mb))
                    o += self.put(f, '%s[i]' % x, ind + '\t')
                    o.append('%s}' % ind)
            else:
                o.append('%sfor (uint32_t i = 0; i < %d; i++) {' % (ind, f.count))
                o += self.put_nested(f, '%s[i]' % x, ind + '\t')
                o.append('%s}' % ind)
        elif f.form == F_VEC:
            o.append('%sp = urs_st_uv(p, %s_len);' % (ind, x))
            i0 = '0'
            if f.base == 'u32':
                o.append('%suint32_t i8 = 0;' % ind)
                o.append('%sfor (; i8 + 8 <= %s_len; i8 += 8) {' % (ind, x))
                o.append('%s\tURS_ST_NEED(40 + URS_ST_SLACK);' % ind)
                o.append('%s\tp = urs_st_uv_u32x8(p, &%s[i8]);' % (ind, x))
                o.append('%s}' % ind)
                i0 = 'i8'
            o.append('%sfor (uint32_t i = %s; i < %s_len; i++) {' % (ind, i0, x))
            if mb:
                if f.base == 'ptr':
                    o.append('%s\tif (i + 8 < %s_len)' % (ind, x))
                    o.append('%s\t\turs_st_enc_pf(e, %s[i + 8]);' % (ind, x))
                o.append('%s\tURS_ST_NEED(%d + URS_ST_SLACK);' % (ind, mb))
                o += self.put(f, '%s[i]' % x, ind + '\t')
            else:
                o += self.put_nested(f, '%s[i]' % x, ind + '\t')
            o.append('%s}' % ind)
        elif f.form in (F_BYTES, F_STRING):
            n = '%s_len' % x if f.form == F_BYTES else 'strlen(%s)' % x
            o.append('%s{' % ind)
            o.append('%s\tsize_t n = %s;' % (ind, n))
            o.append('%s\tp = urs_st_uv(p, n);' % ind)
            o.append('%s\tif (__builtin_expect((size_t) (end - p) >= n, 1)) {' % ind)
            o.append('%s\t\tmemcpy(p, %s, n);' % (ind, x))
            o.append('%s\t\tp += n;' % ind)
            o.append('%s\t} else {' % ind)
            o += self.call_out('urs_st_put_raw(e, %s, n)' % x, ind + '\t\t')
            o.append('%s\t}' % ind)
            o.append('%s}' % ind)
        elif f.form == F_MAP:
            vm = 'p' if f.base == 'ptr' else 'u'
            if f.mapkey not in (0, 'str'):
                o.append('%sif (__builtin_expect(%s.ksize != %d, 0)) {' % (ind, x, f.mapkey))
                o.append('%s\te->p = p;' % ind)
                o.append('%s\turs_st_enc_fail(e, -EINVAL, "%s (key size)");' % (ind, f.name))
                o.append('%s\treturn;' % ind)
                o.append('%s}' % ind)
            o.append('%sp = urs_st_uv(p, %s.len);' % (ind, x))
            o.append('%surs_map_foreach(&%s, i) {' % (ind, x))
            if f.mapkey == 0:
                o.append('%s\tURS_ST_NEED(%d + URS_ST_SLACK);' % (ind, 10 + mb))
                o.append('%s\tp = urs_st_uv(p, %s.ents[i].key);' % (ind, x))
                v = '%s.ents[i].val.%s' % (x, vm)
            elif f.mapkey == 'str':
                o.append('%s\tsize_t kl = strlen(%s.ents[i].key);' % (ind, x))
                o.append('%s\tURS_ST_NEED(5 + URS_ST_SLACK);' % ind)
                o.append('%s\tp = urs_st_uv(p, kl);' % ind)
                o += self.call_out('urs_st_put_raw(e, %s.ents[i].key, kl)' % x, ind + '\t')
                o.append('%s\tURS_ST_NEED(%d + URS_ST_SLACK);' % (ind, mb))
                v = '%s.ents[i].val.%s' % (x, vm)
            else:
                o.append('%s\tURS_ST_NEED(%d + URS_ST_SLACK);' % (ind, f.mapkey + mb))
                o.append('%s\tmemcpy(p, urs_bmap_key(&%s, i), %d);' % (ind, x, f.mapkey))
                o.append('%s\tp += %d;' % (ind, f.mapkey))
                v = 'urs_bmap_val(&%s, i)->%s' % (x, vm)
            if f.base == 'i64':
                v = '(int64_t) ' + v
            o += self.put(f, v, ind + '\t')
            o.append('%s}' % ind)
        elif f.form == F_CUSTOM:
            o.append('%sp = urs_st_uv(p, cv_%s);' % (ind, f.name))
        return o

    # ---- load side
    def get(self, f, x, ind, sub):
        b = f.base
        if b in SCALARS:
            code, ct, lim, k = SCALARS[b]
            if k == 'u' or k == 'b':
                if lim is None:
                    v = 'urs_st_get_uv(d)'
                else:
                    v = '(%s) urs_st_get_ub(d, %s)' % (ct, lim)
                if k == 'b':
                    v = 'urs_st_get_ub(d, 1) != 0'
            elif k == 'i':
                if lim is None:
                    v = 'urs_st_unzz(urs_st_get_uv(d))'
                else:
                    v = '(%s) urs_st_get_ib(d, %s, %s)' % (ct, lim[0], lim[1])
            else:
                v = 'urs_st_get_f64(d)'
            return ['%s%s = %s;' % (ind, x, v)]
        if b == 'ptr':
            return ['%s%s = urs_st_get_ptr(d, %s);' % (ind, x, self.tidx(f.target))]
        if b == 'ref':
            return ['%s%s = urs_st_get_ref(d, %s, &%s);' % (ind, x, ref_code(f, self.byname), x)]
        if b == 'struct':
            return ['%sif (%s_load(d, &%s, %s, fresh))' % (ind, f.target, x, sub),
                    '%s\tbreak;' % ind]
        if b == 'union':
            return ['%surs_st_load_union(d, %s, &%s.tag, &%s.ptr);' % (ind, sub, x, x)]
        raise AssertionError

    def load_field(self, f, x, ind, sub):
        """Decode field f into x; `sub` = C expression of the stored sub type."""
        o = []
        if f.form == F_SCALAR:
            o += self.get(f, x, ind, sub)
        elif f.form == F_ARRAY:
            if f.base == 'u8':
                o.append('%s{' % ind)
                o.append('%s\tconst uint8_t *src = urs_st_get_raw(d, %d);' % (ind, f.count))
                o.append('%s\tif (src)' % ind)
                o.append('%s\t\tmemcpy(%s, src, %d);' % (ind, x, f.count))
                o.append('%s}' % ind)
            else:
                o.append('%sfor (uint32_t i = 0; i < %d && !d->err; i++) {' % (ind, f.count))
                o += self.get(f, '%s[i]' % x, ind + '\t', sub)
                o.append('%s}' % ind)
        elif f.form == F_VEC:
            et = elem_ctype(f).rstrip()
            minb = 8 if f.base == 'f64' else 1
            o.append('%s{' % ind)
            o.append('%s\tuint32_t n = urs_st_get_count(d, %d);' % (ind, minb))
            o.append('%s\t%s *v = n ? urs_st_alloc(d, (size_t) n * sizeof(*v)) : NULL;' %
                     (ind, et))
            o.append('%s\t%s = v;' % (ind, x))
            o.append('%s\t%s_len = v ? n : 0;' % (ind, x))
            o.append('%s\tif (v) {' % ind)
            o.append('%s\t\tbool fresh = true;' % ind) if f.base == 'struct' else None
            o.append('%s\t\t(void) fresh;' % ind) if f.base == 'struct' else None
            o.append('%s\t\tfor (uint32_t i = 0; i < n && !d->err; i++) {' % ind)
            o += self.get(f, 'v[i]', ind + '\t\t\t', sub)
            o.append('%s\t\t}' % ind)
            o.append('%s\t}' % ind)
            o.append('%s}' % ind)
        elif f.form in (F_BYTES, F_STRING):
            s = f.form == F_STRING
            o.append('%s{' % ind)
            o.append('%s\tuint32_t n = urs_st_get_count(d, 1);' % ind)
            o.append('%s\tconst uint8_t *src = urs_st_get_raw(d, n);' % ind)
            if s:
                o.append('%s\tchar *v = src ? urs_st_alloc(d, (size_t) n + 1) : NULL;' % ind)
                o.append('%s\tif (v) {' % ind)
                o.append('%s\t\tmemcpy(v, src, n);' % ind)
                o.append('%s\t\tv[n] = 0;' % ind)
                o.append('%s\t}' % ind)
                o.append('%s\t%s = v;' % (ind, x))
            else:
                o.append('%s\tuint8_t *v = NULL;' % ind)
                o.append('%s\tif (src && n) {' % ind)
                o.append('%s\t\tv = d->borrow ? (uint8_t *) src : urs_st_alloc(d, n);' % ind)
                o.append('%s\t\tif (v && !d->borrow)' % ind)
                o.append('%s\t\t\tmemcpy(v, src, n);' % ind)
                o.append('%s\t}' % ind)
                o.append('%s\t%s = v;' % (ind, x))
                o.append('%s\t%s_len = v ? n : 0;' % (ind, x))
            o.append('%s}' % ind)
        elif f.form == F_MAP and f.mapkey != 0:
            vb = 'p' if f.base == 'ptr' else 'u'
            vt = elem_ctype(f).rstrip()
            o.append('%s{' % ind)
            if f.mapkey == 'str':
                o.append('%s\tuint32_t n = urs_st_get_count(d, 2);' % ind)
                o.append('%s\tif (!d->err && !urs_smap_init_arena(d, &%s, n)) {' % (ind, x))
            else:
                o.append('%s\tuint32_t n = urs_st_get_count(d, %d);' % (ind, f.mapkey + 1))
                o.append('%s\tif (!d->err && !urs_bmap_init_arena(d, &%s, %d, n)) {' %
                         (ind, x, f.mapkey))
            o.append('%s\t\tfor (uint32_t i = 0; i < n && !d->err; i++) {' % ind)
            if f.mapkey == 'str':
                o.append('%s\t\t\tuint32_t kl = urs_st_get_count(d, 1);' % ind)
                o.append('%s\t\t\tconst uint8_t *k = urs_st_get_raw(d, kl);' % ind)
                o.append('%s\t\t\tunion urs_map_val *slot = urs_smap_add_dec(d, &%s, k, kl);'
                         % (ind, x))
            else:
                o.append('%s\t\t\tconst uint8_t *k = urs_st_get_raw(d, %d);' %
                         (ind, f.mapkey))
                o.append('%s\t\t\tunion urs_map_val *slot = urs_bmap_add_dec(d, &%s, k);' %
                         (ind, x))
            o.append('%s\t\t\tif (!slot)' % ind)
            o.append('%s\t\t\t\tbreak;' % ind)
            o.append('%s\t\t\t%s val;' % (ind, vt))
            o += self.get(f, 'val', ind + '\t\t\t', sub)
            if vb == 'p':
                o.append('%s\t\t\tslot->p = val;' % ind)
            else:
                o.append('%s\t\t\tslot->u = (uint64_t) val;' % ind)
            o.append('%s\t\t}' % ind)
            o.append('%s\t}' % ind)
            o.append('%s}' % ind)
        elif f.form == F_MAP:
            vb = 'p' if f.base == 'ptr' else 'u'
            o.append('%s{' % ind)
            o.append('%s\tuint32_t n = urs_st_get_count(d, 2);' % ind)
            o.append('%s\tif (!d->err && !urs_map_init_arena(d, &%s, n)) {' % (ind, x))
            o.append('%s\t\tfor (uint32_t i = 0; i < n && !d->err; i++) {' % ind)
            o.append('%s\t\t\tuint64_t k = urs_st_get_uv(d);' % ind)
            o.append('%s\t\t\tstruct urs_map_ent *ent = urs_map_get(&%s, k);' % (ind, x))
            o.append('%s\t\t\tif (ent) {' % ind)
            o.append('%s\t\t\t\turs_st_dec_fail(d, "duplicate map key");' % ind)
            o.append('%s\t\t\t\tbreak;' % ind)
            o.append('%s\t\t\t}' % ind)
            vt = elem_ctype(f).rstrip()
            o.append('%s\t\t\t%s val;' % (ind, vt))
            o += self.get(f, 'val', ind + '\t\t\t', sub)
            if vb == 'p':
                o.append('%s\t\t\turs_map_put(&%s, k, (uint64_t) (uintptr_t) val);' % (ind, x))
            else:
                o.append('%s\t\t\turs_map_put(&%s, k, (uint64_t) val);' % (ind, x))
            o.append('%s\t\t}' % ind)
            o.append('%s\t}' % ind)
            o.append('%s}' % ind)
        elif f.form == F_CUSTOM:
            o.append('%s%s(&%s, urs_st_get_uv(d));' % (ind, f.custom[2], x))
        return o

    def zero_field(self, f, x, ind):
        if f.form == F_SCALAR:
            if f.base in ('struct', 'union'):
                return ['%smemset(&%s, 0, sizeof(%s));' % (ind, x, x)]
            if f.base in ('ptr', 'ref'):
                return ['%s%s = NULL;' % (ind, x)]
            return ['%s%s = 0;' % (ind, x)]
        if f.form == F_ARRAY:
            return ['%smemset(%s, 0, sizeof(%s));' % (ind, x, x)]
        if f.form in (F_VEC, F_BYTES):
            return ['%s%s = NULL;' % (ind, x), '%s%s_len = 0;' % (ind, x)]
        if f.form == F_STRING:
            return ['%s%s = NULL;' % (ind, x)]
        if f.form == F_MAP:
            return ['%smemset(&%s, 0, sizeof(%s));' % (ind, x, x)]
        if f.form == F_CUSTOM:
            return ['%s%s(&%s, 0);' % (ind, f.custom[2], x)]
        raise AssertionError

    def gen(self, src):
        mod = self.mod
        o = ['/*', ' * %s_codec.c — generated by state/gen/ursc.py from %s; do not edit.' %
             (mod, src),
             ' * Straight-line encoders and decoders for every type of the schema and the',
             ' * schema descriptor (type table) they are registered under.', ' */',
             '#include <errno.h>', '#include <stddef.h>', '#include <stdint.h>',
             '#include <string.h>', '', '#include "%s_types.h"' % mod, '']
        structs = [t for t in self.types if not t.is_union]
        for t in structs:
            n = t.name
            o.append('static void %s_save(struct urs_st_enc *e, const void *obj);' % n)
            o.append('static int %s_load(struct urs_st_dec *d, void *obj, uint32_t stype, '
                     'bool fresh);' % n)
            o.append('static void *%s_addr(void *obj, const uint32_t *path, uint32_t n, '
                     'uint32_t want);' % n)
            if self.has_targets(t):
                o.append('static int %s_locate(const void *obj, uintptr_t a, uint32_t want, '
                         'uint32_t *path, uint32_t room);' % n)
            if self.has_vecs(t):
                o.append('static void %s_vecs(const void *obj, struct urs_st_enc *e, '
                         'uint32_t id, uint32_t type);' % n)
        o.append('')
        for t in structs:
            o += self.gen_type(t)
        # descriptors
        for t in self.types:
            o.append('static const struct urs_st_fdesc %s_fields[] = {' % t.name)
            if t.is_union:
                for v in t.variants:
                    o.append('\t{"%s", URS_ST_F_SCALAR, URS_ST_B_PTR, 0, %s},' %
                             (v, self.tidx(v)))
            else:
                for f in t.fields:
                    if f.nosave:
                        continue
                    sub = '0'
                    if f.base in ('ptr', 'struct', 'union'):
                        sub = self.tidx(f.target)
                    elif f.base == 'ref':
                        sub = ref_code(f, self.byname)
                    cnt = str(f.count)
                    if f.form == F_MAP:
                        cnt = {0: '0', 'str': 'URS_ST_MAP_KSTR'}.get(f.mapkey, str(f.mapkey))
                    o.append('\t{"%s", %d, %d, %s, %s},' %
                             (f.name, f.form, base_code(f), cnt, sub))
            o.append('};')
        o.append('')
        o.append('static const struct urs_st_tdesc %s_types[] = {' % mod)
        for t in self.types:
            n = t.name
            nf = len(t.variants) if t.is_union else len([f for f in t.fields if not f.nosave])
            if t.is_union:
                o.append('\t{"%s", true, %d, %s_fields, sizeof(struct %s), NULL, NULL, NULL, '
                         'NULL, NULL, NULL},' % (n, nf, n, cn(n)))
                continue
            al = t.hooks.get('after_load')
            loc = '%s_locate' % n if self.has_targets(t) else 'NULL'
            vecs = '%s_vecs' % n if self.has_vecs(t) else 'NULL'
            o.append('\t{"%s", false, %d, %s_fields, sizeof(struct %s), %s_save, '
                     '%s_load, %s, %s, %s_addr, %s},' %
                     (n, nf, n, cn(n), n, n, '%s_after_load' % n if al else 'NULL', loc, n,
                      vecs))
        o.append('};')
        o.append('')
        o.append('const struct urs_st_schema %s_schema = {"%s", %d, %s_types};' %
                 (mod, mod, len(self.types), mod))
        return '\n'.join(o) + '\n'

    def gen_type(self, t):
        n = t.name
        ti = self.tidx(n)
        saved = [f for f in t.fields if not f.nosave]
        o = []
        # hooks
        if 'after_load' in t.hooks:
            o.append('static void %s_after_load(void *obj)' % n)
            o.append('{')
            o.append('\t%s(obj);' % t.hooks['after_load'])
            o.append('}')
            o.append('')
        # save: one reserved run of room per stretch of fixed-size fields
        o.append('static void %s_save(struct urs_st_enc *e, const void *obj)' % n)
        o.append('{')
        o.append('\tconst struct %s *o = obj;' % cn(n))
        o.append('\t(void) o;')
        if 'before_save' in t.hooks:
            o.append('\t%s((struct %s *) obj);' % (t.hooks['before_save'], cn(n)))
        # the identity slots this object's pointers will probe: fetched first,
        # the work on the fields before them hides part of the miss
        for f in saved:
            if f.base == 'ptr' and f.form == F_SCALAR:
                o.append('\turs_st_enc_pf(e, o->%s);' % f.name)
            elif f.base == 'ptr' and f.form == F_ARRAY and f.count <= 8:
                for k in range(f.count):
                    o.append('\turs_st_enc_pf(e, o->%s[%d]);' % (f.name, k))
        for f in saved:
            if f.form == F_CUSTOM:
                o.append('\tuint64_t cv_%s = %s(&o->%s);' % (f.name, f.custom[1], f.name))
        o.append('\tuint64_t bm = 0;')
        for i, f in enumerate(saved):
            o.append('\tif (%s)' % self.present(f, 'o->%s' % f.name))
            o.append('\t\tbm |= UINT64_C(1) << %d;' % i)

        def run(start):
            """room for fields start.. up to the first variable one's prefix"""
            total = 0
            for f in saved[start:]:
                fs = self.fixed_size(f)
                if fs is None:
                    return total + self.prefix_size(f)
                total += fs
            return total
        o.append('\tuint8_t *p = e->p, *end = e->end;')
        self.idt = any(f.base == 'ptr' for f in saved)
        if self.idt:
            o.append('\tstruct urs_st_idt idt = urs_st_idt_of(e);')
        o.append('\tURS_ST_NEED(%d + URS_ST_SLACK);' % (10 + run(0)))
        o.append('\tp = urs_st_uv(p, bm);')
        for i, f in enumerate(saved):
            o.append('\tif (bm & (UINT64_C(1) << %d)) {' % i)
            o += self.save_field(f, 'o->%s' % f.name, '\t\t')
            o.append('\t}')
            if self.fixed_size(f) is None and i + 1 < len(saved):
                o.append('\tURS_ST_NEED(%d + URS_ST_SLACK);' % run(i + 1))
        o.append('\te->p = p;')
        o.append('}')
        o.append('')
        # load
        nf = len(saved)
        o.append('static int %s_load(struct urs_st_dec *d, void *obj, uint32_t stype, bool fresh)' %
                 n)
        o.append('{')
        o.append('\tstruct %s *o = obj;' % cn(n))
        o.append('\tconst struct urs_st_stype *st = &d->st[stype];')
        o.append('\t(void) o;')
        o.append('\tuint64_t bm = urs_st_get_uv(d);')
        o.append('\tif (d->err)')
        o.append('\t\treturn urs_st_field_err(d, %s, "(field bitmap)");' % ti)
        o.append('\tif (st->nfields < 64 && (bm >> st->nfields)) {')
        o.append('\t\turs_st_dec_fail(d, "bitmap names a field the stored type lacks");')
        o.append('\t\treturn urs_st_field_err(d, %s, "(field bitmap)");' % ti)
        o.append('\t}')
        o.append('\tif (st->identical) {')
        for i, f in enumerate(saved):
            x = 'o->%s' % f.name
            o.append('\t\tif (bm & (UINT64_C(1) << %d)) {' % i)
            o.append('\t\t\tdo {')
            o += self.load_field(f, x, '\t\t\t\t', 'st->fields[%d].sub' % i)
            o.append('\t\t\t} while (0);')
            o.append('\t\t\tif (__builtin_expect(d->err, 0))')
            o.append('\t\t\t\treturn urs_st_field_err(d, %s, "%s");' % (ti, f.name))
            o.append('\t\t} else if (!fresh) {')
            o += self.zero_field(f, x, '\t\t\t')
            o.append('\t\t}')
        o.append('\t\treturn 0;')
        o.append('\t}')
        o.append('\tuint64_t got = 0;')
        o.append('\twhile (bm) {')
        o.append('\t\tuint32_t fi = (uint32_t) __builtin_ctzll(bm);')
        o.append('\t\tbm &= bm - 1;')
        o.append('\t\tswitch (st->fields[fi].cur) {')
        for i, f in enumerate(saved):
            x = 'o->%s' % f.name
            o.append('\t\tcase %d:' % i)
            o.append('\t\t\tdo {')
            o += self.load_field(f, x, '\t\t\t\t', 'st->fields[fi].sub')
            o.append('\t\t\t} while (0);')
            o.append('\t\t\tif (__builtin_expect(d->err, 0))')
            o.append('\t\t\t\treturn urs_st_field_err(d, %s, "%s");' % (ti, f.name))
            o.append('\t\t\tgot |= UINT64_C(1) << %d;' % i)
            o.append('\t\t\tbreak;')
        o.append('\t\tdefault:')
        o.append('\t\t\tif (urs_st_skip(d, stype, fi))')
        o.append('\t\t\t\treturn urs_st_field_err(d, %s, "(skipped field)");' % ti)
        o.append('\t\t\tbreak;')
        o.append('\t\t}')
        o.append('\t}')
        o.append('\tif (!fresh) {')
        o.append('\t\tuint64_t z = st->cur_mask & ~got;')
        o.append('\t\t(void) z;')
        for i, f in enumerate(saved):
            o.append('\t\tif (z & (UINT64_C(1) << %d)) {' % i)
            o += self.zero_field(f, 'o->%s' % f.name, '\t\t\t')
            o.append('\t\t}')
        o.append('\t}')
        o.append('\treturn 0;')
        o.append('}')
        o.append('')
        # locate / addr (interior pointers); no locate when nothing in the
        # type can be a reference's target (its objects stay out of the
        # encoder's range table)
        if self.has_targets(t):
            o += self.gen_locate(t, saved)
        if self.has_vecs(t):
            o += self.gen_vecs(t, saved)
        o += self.gen_addr(t, saved)
        return o

    def place_kind(self, f):
        """What a reference can point at inside field f: 'scalar' (its
        elements are scalar targets), 'struct' (embedded structs: a target,
        and a path can continue into them) or None."""
        if f.nosave or f.form not in (F_SCALAR, F_ARRAY, F_VEC):
            return None
        if f.base in SCALARS:
            return 'scalar'
        if f.base == 'struct':
            return 'struct'
        return None

    def has_targets(self, t):
        return any(self.place_kind(f) for f in t.fields)

    def has_vecs(self, t):
        """objects of t hold vec storage a reference can point into (in t,
        or in structs embedded in it)"""
        for f in t.fields:
            k = self.place_kind(f)
            if k and f.form == F_VEC:
                return True
            if k == 'struct' and f.form != F_VEC and self.has_vecs(self.byname[f.target]):
                return True
        return False

    def place(self, f, x):
        """(start expression, element count expression) of field f's places"""
        if f.form == F_VEC:
            return '(uintptr_t) %s' % x, '(size_t) %s_len' % x
        if f.form == F_ARRAY:
            return '(uintptr_t) %s' % x, '(size_t) %d' % f.count
        return '(uintptr_t) &%s' % x, '(size_t) 1'

    def elem(self, f, x, k):
        return '&%s[%s]' % (x, k) if f.form in (F_VEC, F_ARRAY) else '&%s' % x

    def gen_locate(self, t, saved):
        n = t.name
        o = []
        o.append('static int %s_locate(const void *obj, uintptr_t a, uint32_t want, '
                 'uint32_t *path, uint32_t room)' % n)
        o.append('{')
        o.append('\tconst struct %s *o = obj;' % cn(n))
        for i, f in enumerate(saved):
            k = self.place_kind(f)
            if not k:
                continue
            x = 'o->%s' % f.name
            start, cnt = self.place(f, x)
            es = self.elem_sizeof(f)
            o.append('\t{')
            o.append('\t\tuintptr_t s = %s;' % start)
            if k == 'scalar':
                o.append('\t\tif (want == %s && a - s < %s * sizeof(%s)) {' %
                         (self.target_code(f), cnt, es))
                o.append('\t\t\tif ((a - s) %% sizeof(%s))' % es)
                o.append('\t\t\t\treturn -ENOENT;')
                o.append('\t\t\tif (!room)')
                o.append('\t\t\t\treturn -E2BIG;')
                o.append('\t\t\tpath[0] = %d;' % i)
                o.append('\t\t\tpath[1] = (uint32_t) ((a - s) / sizeof(%s));' % es)
                o.append('\t\t\treturn 1;')
                o.append('\t\t}')
            else:
                st = self.byname[f.target]
                o.append('\t\tif (a - s < %s * sizeof(%s)) {' % (cnt, es))
                o.append('\t\t\tsize_t r = a - s, k = r / sizeof(%s);' % es)
                o.append('\t\t\tif (!room)')
                o.append('\t\t\t\treturn -E2BIG;')
                o.append('\t\t\tpath[0] = %d;' % i)
                o.append('\t\t\tpath[1] = (uint32_t) k;')
                o.append('\t\t\tif (want == URS_ST_REF_TYPE + %s && r %% sizeof(%s) == 0)' %
                         (self.tidx(st.name), es))
                o.append('\t\t\t\treturn 1;')
                if self.has_targets(st):
                    o.append('\t\t\tint m = %s_locate(%s, a, want, path + 2, room - 1);' %
                             (st.name, self.elem(f, x, 'k')))
                    o.append('\t\t\treturn m < 0 ? m : m + 1;')
                else:
                    o.append('\t\t\treturn -ENOENT;')
                o.append('\t\t}')
                if self.has_vecs(st):
                    # vecs held by the embedded structs: their storage is
                    # elsewhere, so ask each element (linear in the count)
                    cnt = self.place(f, x)[1]
                    o.append('\t\tfor (size_t k = 0; k < %s; k++) {' % cnt)
                    o.append('\t\t\tint m = %s_locate(%s, a, want, path + 2, '
                             'room ? room - 1 : 0);' % (st.name, self.elem(f, x, 'k')))
                    o.append('\t\t\tif (m == -ENOENT)')
                    o.append('\t\t\t\tcontinue;')
                    o.append('\t\t\tif (m < 0 || !room)')
                    o.append('\t\t\t\treturn m < 0 ? m : -E2BIG;')
                    o.append('\t\t\tpath[0] = %d;' % i)
                    o.append('\t\t\tpath[1] = (uint32_t) k;')
                    o.append('\t\t\treturn m + 1;')
                    o.append('\t\t}')
            o.append('\t}')
        o.append('\t(void) o;')
        o.append('\t(void) a;')
        o.append('\t(void) want;')
        o.append('\t(void) path;')
        o.append('\t(void) room;')
        o.append('\treturn -ENOENT;')
        o.append('}')
        o.append('')
        return o

    def gen_vecs(self, t, saved):
        n = t.name
        o = []
        o.append('static void %s_vecs(const void *obj, struct urs_st_enc *e, uint32_t id, '
                 'uint32_t type)' % n)
        o.append('{')
        o.append('\tconst struct %s *o = obj;' % cn(n))
        for f in saved:
            k = self.place_kind(f)
            if not k:
                continue
            x = 'o->%s' % f.name
            deeper = k == 'struct' and self.has_vecs(self.byname[f.target])
            if f.form == F_VEC:
                o.append('\turs_st_enc_vrange(e, %s, (size_t) %s_len * sizeof(%s), id, type);' %
                         (x, x, self.elem_sizeof(f)))
            if deeper and f.form == F_SCALAR:
                o.append('\t%s_vecs(&%s, e, id, type);' % (f.target, x))
            elif deeper:
                cnt = self.place(f, x)[1]
                o.append('\tfor (size_t k = 0; k < %s; k++)' % cnt)
                o.append('\t\t%s_vecs(%s, e, id, type);' % (f.target, self.elem(f, x, 'k')))
        o.append('}')
        o.append('')
        return o

    def gen_addr(self, t, saved):
        n = t.name
        o = []
        o.append('static void *%s_addr(void *obj, const uint32_t *path, uint32_t n, uint32_t want)'
                 % n)
        o.append('{')
        o.append('\tstruct %s *o = obj;' % cn(n))
        o.append('\tuint32_t el = path[1];')
        o.append('\t(void) o;')
        o.append('\t(void) el;')
        o.append('\t(void) n;')
        o.append('\t(void) want;')
        o.append('\tswitch (path[0]) {')
        for i, f in enumerate(saved):
            k = self.place_kind(f)
            if not k:
                continue
            x = 'o->%s' % f.name
            cnt = self.place(f, x)[1]
            o.append('\tcase %d:' % i)
            o.append('\t\tif (el >= %s)' % cnt)
            o.append('\t\t\treturn NULL;')
            if k == 'scalar':
                o.append('\t\treturn n == 1 && want == %s ? (void *) %s : NULL;' %
                         (self.target_code(f), self.elem(f, x, 'el')))
            else:
                o.append('\t\tif (n == 1)')
                o.append('\t\t\treturn want == URS_ST_REF_TYPE + %s ? (void *) %s : NULL;' %
                         (self.tidx(f.target), self.elem(f, x, 'el')))
                o.append('\t\treturn %s_addr(%s, path + 2, n - 1, want);' %
                         (f.target, self.elem(f, x, 'el')))
        o.append('\t}')
        o.append('\treturn NULL;')
        o.append('}')
        o.append('')
        return o

    def target_code(self, f):
        if f.base in SCALARS:
            return str(SCALARS[f.base][0])
        return None

    def elem_sizeof(self, f):
        if f.base in SCALARS:
            return SCALARS[f.base][1]
        return 'struct %s' % cn(f.target)


def main(argv):
    if len(argv) != 4:
        sys.stderr.write('usage: ursc.py SCHEMA.ursc OUT_TYPES_H OUT_CODEC_C\n')
        return 2
    src, oh, oc = argv[1:]
    mod = os.path.basename(src).rsplit('.', 1)[0]
    if not re.match(r'^[A-Za-z_]\w*$', mod):
        sys.stderr.write('ursc: schema file name must be a C identifier\n')
        return 2
    try:
        with open(src) as fp:
            types, byname = parse(fp.read(), os.path.basename(src))
        order = resolve(types, byname)
    except SchemaError as e:
        sys.stderr.write('ursc: %s\n' % e)
        return 1
    sname = os.path.basename(src)
    with open(oh, 'w') as fp:
        fp.write(gen_header(mod, types, order, byname, sname))
    with open(oc, 'w') as fp:
        fp.write(CodeGen(mod, types, byname).gen(sname))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))

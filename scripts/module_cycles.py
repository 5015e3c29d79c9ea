"""Module import cycles of each crate source folder given (the test command
runs it over the workspace; exit 1 on any cycle): every file is a module; an edge A -> B
for every path A names into B (use items and inline crate::/super:: paths);
edges between a module and its own ancestors or descendants are the tree,
not imports. Prints the strongly connected components of more than one module."""
import os, re, sys

def modules(src):
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith('.rs'): continue
            p = os.path.join(root, f)
            rel = os.path.relpath(p, src)[:-3].split(os.sep)
            if rel[-1] in ('mod', 'lib', 'main'): rel = rel[:-1]
            mods[tuple(rel)] = p
    return mods

def resolve(path, here, mods):
    # path: list of segments after crate:: or relative with super/self
    segs = list(path)
    if segs and segs[0] == 'crate': base = []; segs = segs[1:]
    else:
        base = list(here)
        while segs and segs[0] in ('super', 'self'):
            if segs[0] == 'super': base = base[:-1]
            segs = segs[1:]
    full = base + segs
    # the deepest existing module prefix
    for k in range(len(full), -1, -1):
        if tuple(full[:k]) in mods: return tuple(full[:k])
    return None

def uses(text):
    text = re.sub(r'//[^\n]*', '', text)
    out = []
    for m in re.finditer(r'\buse\s+((?:crate|super|self)(?:::\w+)*)(?:::\{([^;]*)\})?', text, re.S):
        head = m.group(1).split('::')
        if m.group(2):
            for item in re.split(r',', m.group(2)):
                item = item.strip().split(' as ')[0].strip()
                if not item or item == 'self': out.append(head); continue
                item = re.sub(r'\{.*', '', item)
                out.append(head + [s for s in item.split('::') if s and s != '*'])
        else:
            out.append(head)
    for m in re.finditer(r'\b((?:crate|super)(?:::\w+)+)', text):
        out.append(m.group(1).split('::'))
    return out

def main(src):
    mods = modules(src)
    edges = {m: set() for m in mods}
    for m, p in mods.items():
        for u in uses(open(p).read()):
            t = resolve(u, m, mods)
            if t is None or t == m: continue
            if t[:len(m)] == m or m[:len(t)] == t: continue  # tree, not import
            edges[m].add(t)
    # Tarjan
    idx, low, st, on, comps, c = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)
    def visit(v):
        idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
        for w in edges[v]:
            if w not in idx: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v: break
            comps.append(comp)
    for v in mods:
        if v not in idx: visit(v)
    bad = [c for c in comps if len(c) > 1]
    print(f"{src}: {len(mods)} modules, {sum(len(e) for e in edges.values())} edges, {len(bad)} cycles")
    for c in bad:
        names = {'::'.join(x) or 'crate' for x in c}
        print('  cycle:', sorted(names))
        for a in c:
            for b in edges[a]:
                if b in c: print('    ', '::'.join(a) or 'crate', '->', '::'.join(b) or 'crate')
    return len(bad)

if __name__ == "__main__":
    sys.exit(1 if sum(main(s) for s in sys.argv[1:]) else 0)

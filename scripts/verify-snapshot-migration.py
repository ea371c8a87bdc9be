import os
STRICT=os.environ.get("STRICT")=="1"
# Compare every insta .snap body with its tests/out file (byte-identical up to insta's
# trailing-newline normalisation). Prints mismatches and unmapped snapshots.
import os,sys,re,glob
root=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
snapdir=root+'/crates/sarek-compiler/tests/snapshots'
out=root+'/tests/out'
ext={'opencl':'cl','cuda':'cu','metal':'metal','ptx':'ptx','glsl':'comp','wgsl':'wgsl','ir':'ir'}
stems=sorted(os.path.basename(p)[:-6] for p in glob.glob(root+'/tests/kernels/*.sarek'))
def body(p):
    s=open(p).read()
    assert s.startswith('---\n')
    i=s.index('\n---\n',4)
    return s[i+5:]
def target_files(target, case):
    base=f'{out}/{target}/{case}'
    return [base+'.'+ext[target], base+'.refused']
def corpus_case(name):  # stem__kernel or ir__kernel
    a,b=name.split('__',1)
    return f'{a}.{b}'
bad=0; ok=0; unmapped=[]
for p in sorted(glob.glob(snapdir+'/*.snap')):
    n=os.path.basename(p)[:-5]
    test,rest=n.split('__',1)
    cands=[]
    if test=='cfamily_snapshots':
        case,t=rest.rsplit('.',1)
        cands=target_files(t,corpus_case(case))
    elif test=='ptx_snapshots':
        case=rest[:-4]; cands=target_files('ptx',corpus_case(case))
    elif test=='glsl_corpus':
        if rest.startswith('sample_'):
            cands=target_files('glsl','glsl_sample.'+rest[7:])
        else:
            cands=target_files('glsl',corpus_case(rest))
    elif test=='ir_snapshots':
        cands=target_files('ir',corpus_case(rest))
    elif test=='wgsl_gen':
        cands=target_files('wgsl','ir_wgsl.'+rest[5:])
    elif test=='wgsl_corpus':
        r=rest[len('wgsl_corpus_'):]
        for s in stems:
            if r.startswith(s+'_'):
                cands+=target_files('wgsl',s+'.'+r[len(s)+1:])
    found=[c for c in cands if os.path.exists(c)]
    if len(found)!=1:
        unmapped.append((n,cands)); continue
    f=found[0]; want=body(p)
    have=open(f).read()
    if f.endswith('.refused'):
        assert want.startswith('refused:\n'), n
        want=want[len('refused:\n'):]
    if (want==have if STRICT else want.rstrip("\n")==have.rstrip("\n")):
        ok+=1
    else:
        bad+=1; print('DIFF',n,f)
print('identical',ok,'different',bad,'unmapped',len(unmapped))
for u in unmapped[:20]: print('UNMAPPED',u)

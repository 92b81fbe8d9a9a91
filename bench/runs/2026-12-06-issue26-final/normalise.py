import sys,json
ev=[];out=[]
for l in open(sys.argv[1]):
    e=json.loads(l)
    def strip(x):
        if isinstance(x,dict): return {k:strip(v) for k,v in x.items() if k not in ('date','wall_seconds')}
        if isinstance(x,list): return [strip(v) for v in x]
        return x
    e=strip(e)
    (out if e.get('type')=='outcome' else ev).append(json.dumps(e,sort_keys=True))
print('\n'.join(ev)); print('\n'.join(sorted(out)))

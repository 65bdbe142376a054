gpuwatt loadlevel --out seed --json --warmup 2s --calibrations 2 --pre 500ms --record 2s --post 500ms --idle 2s --contexts 8 --preset seed --levels 100,50

gpuwatt loadlevel --out own-4096-x256 --json --warmup 2s --calibrations 2 --pre 500ms --record 2s --post 500ms --idle 2s --contexts 8 --variant gpu --size 4096 --batch 256 --levels 100

gpuwatt loadlevel --out runs3 --json --runs 3

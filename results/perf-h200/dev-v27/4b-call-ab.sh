#!/bin/bash
# v27 call 4b (on call 4's warm machine, the command line below): call 4's `ab` of prep_early=1 once more, and
# prep_early=2 (the conv weights before the wait, no history prefetch), library c00efedfc66a.
set -u
. tools/devcall.sh
devcall_ab 4-q91.yaml E1-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,prep_early=1" "prep_early=1 (B) vs default (A), 27B ctx 1, repeat"
devcall_ab 4-q91.yaml E2-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,prep_early=2" "prep_early=2 (B) vs default (A), 27B ctx 1"
devcall_close $OUT/ab.db

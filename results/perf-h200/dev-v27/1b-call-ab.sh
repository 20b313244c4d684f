#!/bin/bash
# v27 call 1b (run on call 1's warm machine, the command line below; call 1's own ab lines were refused: they
# compared the shipped library with default options against the new library with delta_trig/delta_pf set,
# two variables at once). The same pairs with ONE variable, the options, on call 1's library 484bf2c3e91d.
set -u
. tools/devcall.sh
xz -dkf $G/base.so.xz $G/base-trace.so.xz
devcall_ab 1-q88.yaml T3P1-a cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,delta_trig=3,delta_pf=1" "delta_trig=3,delta_pf=1 (B) vs default (A), 484bf2c3e91d, 27B ctx 1"
devcall_ab 1-q88.yaml T3P1-a cuda "graph=1,ctx=4608,delta_trig=3" cuda "graph=1,ctx=4608,delta_trig=3,delta_pf=1" "delta_trig=3,delta_pf=1 (B) vs delta_trig=3 (A), 484bf2c3e91d, 27B ctx 1"
DEVCALL_AB_TIMEOUT=100 devcall_ab 1-q88.yaml q9-T3P1 cuda "graph=1,ctx=4608" cuda "graph=1,ctx=4608,delta_trig=3,delta_pf=1" "delta_trig=3,delta_pf=1 (B) vs default (A), 484bf2c3e91d, 9B ctx 1"
devcall_close $OUT/ab.db

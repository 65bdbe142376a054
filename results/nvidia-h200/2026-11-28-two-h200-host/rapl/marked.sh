#!/usr/bin/env bash
echo begin matmul >> "$GPUWATT_MARKS"; python3 bench/load/matmul.py --seconds 2; echo end matmul >> "$GPUWATT_MARKS"
echo begin rest >> "$GPUWATT_MARKS"; sleep 1; echo end rest >> "$GPUWATT_MARKS"

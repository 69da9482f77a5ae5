#!/usr/bin/env bash
# Commands the page "Getting Started with OpenAI Triton" shows; each section is one block.
# --8<-- [start:bench]
python snippets/triton_getting_started/vector_add.py --bench
# --8<-- [end:bench]

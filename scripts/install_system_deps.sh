#!/usr/bin/env bash
# Installs the Debian packages the test suite needs (WordNet 3.0, Chromium + driver, pdflatex).
set -euo pipefail
need=()
[ -d /usr/share/wordnet ] || need+=(wordnet-base wordnet-sense-index)
command -v chromium >/dev/null 2>&1 || need+=(chromium chromium-driver)
# pdflatex and booktabs: the LaTeX tables of `xmodal compare` are compiled in the tests
command -v pdflatex >/dev/null 2>&1 || need+=(texlive-latex-base texlive-latex-recommended)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" != "0" ]; then
  echo "missing Debian packages: ${need[*]} (run as root or install them; tests needing them will skip)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null

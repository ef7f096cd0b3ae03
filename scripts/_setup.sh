# Shared by scripts/chat and scripts/test: system packages, then the virtualenv.
# Usage: . scripts/_setup.sh "<apt packages>" "<pip extras spec>"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "Switchboard needs Python 3.11 or newer (found $(python3 --version 2>&1))." >&2; exit 1; }
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=""
for pkg in $1; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=" $pkg"; done
python3 -c 'import ensurepip' 2>/dev/null || missing+=" python3-venv"
if [ -n "$missing" ]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e "$2"

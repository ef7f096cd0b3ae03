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
# Reinstall only when the project's requirements changed (a stamp of pyproject.toml, the
# extras asked for and the Python), and keep pip's and setuptools' chatter in a log that
# is shown only when the install fails.
stamp="$( { cat pyproject.toml; echo "$2"; .venv/bin/python -VV; } | sha256sum | cut -d' ' -f1)"
if [ "$(cat .venv/.switchboard-stamp 2>/dev/null)" != "$stamp" ]; then
    echo "Installing Switchboard into .venv (once per change of pyproject.toml)..." >&2
    if ! { PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/python -m pip install -q --upgrade pip &&
           PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/python -m pip install -q -e "$2"; } \
            >.venv/install.log 2>&1; then
        cat .venv/install.log >&2
        echo "Installing Switchboard failed (log above, also in .venv/install.log)." >&2
        exit 1
    fi
    echo "$stamp" >.venv/.switchboard-stamp
fi

#!/usr/bin/env bash
# Set up tinyaot on a fresh Debian/Ubuntu machine: system packages (when root or sudo is available),
# a virtual environment in .venv with torch==2.13.0 (CPU) and tinyaot installed editable with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(gcc g++ make cmake python3 python3-venv gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib qemu-system-arm chromium)

install_system_packages() {
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo="sudo"
        else
            echo "setup: not root and no password-less sudo: skipping system packages." >&2
            echo "setup: install them yourself: apt-get install --no-install-recommends ${APT_PACKAGES[*]}" >&2
            return 0
        fi
    fi
    local missing=()
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        echo "setup: system packages already installed"
        return 0
    fi
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

if command -v apt-get >/dev/null 2>&1; then
    install_system_packages
else
    echo "setup: no apt-get; install gcc, arm-none-eabi-gcc + newlib, qemu-system-arm yourself" >&2
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test]"
echo "setup: done. Run: .venv/bin/tinyaot demo"

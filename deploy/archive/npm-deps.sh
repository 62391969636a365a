#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Install the archive Worker's npm packages (miniflare and the workerd binary it ships) into
# deploy/archive/node_modules, exactly as package-lock.json pins them, unless they are
# already there: offline-safe once installed.  Never global.  Used by `make archive-deps`
# and tests/archive/test_worker.sh.
#   npm-deps.sh          install what is missing
#   npm-deps.sh --check  only say whether it is installed; exit 1 if not
set -eu
cd "$(dirname "$0")"

# undici, which miniflare 4 needs, wants Node.js 20.18.1 or later (Debian 12's own is 18)
if ! command -v node >/dev/null; then
	echo "error: node not found: install Debian's nodejs ('sudo make deps')" >&2
	exit 1
fi
if ! node -e 'const [a, b, c] = process.versions.node.split(".").map(Number);
	process.exit(a > 20 || (a === 20 && (b > 18 || (b === 18 && c >= 1))) ? 0 : 1)'; then
	echo "error: node $(node --version) is too old for miniflare 4:" \
		"it needs 20.18.1 or later" >&2
	exit 1
fi

# npm ci empties node_modules first, so the stamp is there only after a complete install
stamp=node_modules/.culpert-package-lock.json
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then
	exit 0
fi
if [ "${1:-}" = "--check" ]; then
	echo "error: deploy/archive's npm packages are not installed: run 'make archive-deps'" >&2
	exit 1
fi

# a nodejs that does not bundle npm (Debian's own) has it as a package of its own
if ! command -v npm >/dev/null; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		echo "error: npm not found: install Debian's npm ('sudo apt-get install npm')" >&2
		exit 1
	fi
	echo "  DEPS      installing: npm"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null
fi

echo "  NPM       npm ci in deploy/archive"
# workerd's and sharp's install scripts are not needed: the binary ships in
# @cloudflare/workerd-linux-64, and sharp (image bindings) is never loaded
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
cp package-lock.json "$stamp"

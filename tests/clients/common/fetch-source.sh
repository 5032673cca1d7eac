#!/usr/bin/env bash
# Fetch the Debian source of an installed package's source package (the version installed on
# this machine) into DEST, for test suites that ship only in the source (HDF5's testpar/,
# ROMIO's and MPICH's I/O tests).
#   usage: fetch-source.sh SOURCE-PACKAGE DEST PATH...
# PATH...: what to keep of the unpacked source (files or directories, relative to its top);
# each must exist, and everything else is removed. The deb-src entry is made at run time from
# this machine's own apt configuration (the first `deb` entry for the release's main component,
# in /etc/apt/sources.list{,.d/*.list,.d/*.sources}), and apt runs on private lists under
# DEST/apt, so the system's apt state is not touched.
# Prints the source directory (DEST/PACKAGE-UPSTREAMVERSION) on success. Exit 77 (skip) when
# the source cannot be had.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: fetch-source.sh SOURCE-PACKAGE DEST PATH..." >&2; exit 2; }
pkg=$1 dest=$2
shift 2
keep=("$@")
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
skip() { echo "fetch-source: $*" >&2; exit 77; }

# The source version of the installed binary packages built from $pkg (the first one listed).
ver=$(dpkg-query -W -f='${db:Status-Abbrev}|${source:Package}|${source:Version}\n' 2>/dev/null |
      awk -F'|' -v p="$pkg" '$1 ~ /^ii/ && $2 == p { print $3; exit }') || true
[ -n "$ver" ] || skip "no installed package is built from the source package $pkg (scripts/install-deps.sh installs the clients)"
upver=${ver#*:}; upver=${upver%-*}          # 1.10.8+repack1
src=$dest/$pkg-$upver
have_all() { local k; for k in "${keep[@]}"; do [ -e "$src/$k" ] || return 1; done; }
if [ -f "$dest/.done-$ver" ] && have_all; then echo "$src"; exit 0; fi

command -v apt-get >/dev/null || skip "apt-get not found"
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || skip "no VERSION_CODENAME in /etc/os-release"

# One "URI|signed-by" per line, from one-line and deb822 sources, for SUITE=codename, main.
entries() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk -v cn="$codename" '
      /^[[:space:]]*deb[[:space:]]/ {
        line = $0; sb = ""
        if (match(line, /\[[^]]*\]/)) {
          opts = substr(line, RSTART + 1, RLENGTH - 2)
          line = substr(line, 1, RSTART - 1) substr(line, RSTART + RLENGTH)
          n = split(opts, o, /[[:space:]]+/)
          for (i = 1; i <= n; i++) if (o[i] ~ /^signed-by=/) sb = substr(o[i], 11)
        }
        n = split(line, w, /[[:space:]]+/)
        k = 0; for (i = 1; i <= n; i++) if (w[i] != "") v[++k] = w[i]
        if (k >= 4 && v[3] == cn) for (i = 4; i <= k; i++) if (v[i] == "main") { print v[2] "|" sb; break }
      }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v cn="$codename" '
      function flush() {
        if (types ~ /(^|[[:space:]])deb([[:space:]]|$)/ && enabled != "no" &&
            (" " suites " ") ~ (" " cn " ") && (" " comps " ") ~ / main /) {
          n = split(uris, u, /[[:space:]]+/)
          for (i = 1; i <= n; i++) if (u[i] != "") print u[i] "|" sb
        }
        types = uris = suites = comps = sb = enabled = ""
      }
      /^#/ { next }
      /^[[:space:]]*$/ { flush(); next }
      /^[A-Za-z-]+:/ {
        key = tolower($1); sub(/:$/, "", key); val = $0; sub(/^[^:]*:[[:space:]]*/, "", val)
        if (key == "types") types = val; else if (key == "uris") uris = val
        else if (key == "suites") suites = val; else if (key == "components") comps = val
        else if (key == "signed-by") sb = val; else if (key == "enabled") enabled = tolower(val)
      }
      END { flush() }' "$f"
  done
}
entry=$(entries | head -n 1)
[ -n "$entry" ] || skip "no 'deb ... $codename main' entry in the apt configuration"
uri=${entry%%|*} signedby=${entry#*|}

apt=$dest/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
opt=""
[ -n "$signedby" ] && [ -f "$signedby" ] && opt=" [signed-by=$signedby]"
echo "deb-src$opt $uri $codename main" > "$apt/sources.list"
aptopts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
         -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
         -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)" -q)
echo "fetch-source: apt-get source $pkg=$ver (deb-src from the machine's apt configuration)" >&2
apt-get "${aptopts[@]}" update >"$apt/update.log" 2>&1 ||
  skip "apt-get update of the deb-src list failed (see $apt/update.log)"
work=$dest/download
rm -rf "$work" "$src"
mkdir -p "$work"
if ! (cd "$work" && apt-get "${aptopts[@]}" source --download-only "$pkg=$ver" >"$apt/source.log" 2>&1); then
  skip "apt-get source $pkg=$ver failed (see $apt/source.log)"
fi
# Unpack with Debian's patches when dpkg-source is there, else the upstream tarball alone.
dsc=$(ls "$work"/"${pkg}"_*.dsc 2>/dev/null | head -n 1 || true)
if [ -n "$dsc" ] && command -v dpkg-source >/dev/null &&
   (cd "$work" && dpkg-source --no-check -x "$dsc" "$src" >"$apt/extract.log" 2>&1); then
  :
else
  orig=$(ls "$work"/"${pkg}"_*.orig.tar.* 2>/dev/null | head -n 1 || true)
  [ -n "$orig" ] || skip "no $pkg .orig tarball in $work"
  rm -rf "$src"
  mkdir -p "$src"
  tar -xf "$orig" -C "$src" --strip-components=1
fi
for k in "${keep[@]}"; do
  [ -e "$src/$k" ] || skip "the $pkg source in $src has no $k"
done
# Keep only what the tests build from (HDF5: 126 MiB unpacked, 12 kept).
mv "$src" "$src.full"
mkdir -p "$src"
for k in "${keep[@]}"; do
  mkdir -p "$src/$(dirname "$k")"
  mv "$src.full/$k" "$src/$k"
done
# dpkg-source leaves the upstream tarball beside the unpacked tree.
rm -rf "$src.full" "$apt/lists" "$apt/cache" "$work" "$dest/${pkg}"_*
touch "$dest/.done-$ver"
echo "$src"

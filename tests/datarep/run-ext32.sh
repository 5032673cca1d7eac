#!/usr/bin/env bash
# Runs datarep_ext32 (ext32.c) in one of three ways; exits non-zero on any difference.
#   run-ext32.sh FLAVOUR NP EXE LIBPARIO DIR self
#       pario writes, pario reads back, and the bytes are checked against the standard's
#   run-ext32.sh FLAVOUR NP EXE LIBPARIO DIR writecheck
#       pario writes and the bytes are checked (no read back)
#   run-ext32.sh FLAVOUR NP EXE LIBPARIO DIR native
#       the native MPI-IO writes and pario writes the same calls: byte-identical files; pario
#       reads the native files back
#   run-ext32.sh FLAVOUR NP EXE LIBPARIO DIR cross EXE2 LIBPARIO2 FLAVOUR2
#       pario on FLAVOUR writes, pario on FLAVOUR2 reads back, and the other way round
#       (skipped, exit 0 with a note, when the other flavour's build tree is missing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run=$here/../../scripts/mpirun.sh
flavour=$1 np=$2 exe=$3 lib=$4 dir=$5 mode=$6
rm -rf "$dir" && mkdir -p "$dir"
case "$mode" in
  self)
    "$run" "$flavour" "$np" --pario "$lib" "$exe" write "$dir"
    "$exe" check "$dir" "$np"
    "$run" "$flavour" "$np" --pario "$lib" "$exe" read "$dir" ;;
  writecheck) # pario writes and the bytes are checked (a write-only shared-pointer component)
    "$run" "$flavour" "$np" --pario "$lib" "$exe" write "$dir"
    "$exe" check "$dir" "$np" ;;
  native)
    mkdir -p "$dir/native" "$dir/pario"
    # The native run's own checks (counts in statuses, file pointers) are reported, not
    # judged: OMPIO counts them in file bytes (README.md lists the differences).
    "$run" "$flavour" "$np" "$exe" write "$dir/native" ||
      echo "(the native MPI-IO's statuses or pointers differ from the standard: see above)"
    "$run" "$flavour" "$np" --pario "$lib" "$exe" write "$dir/pario"
    status=0 right=""
    for f in "$dir"/native/ext32.*; do
      name=${f##*/ext32.}
      if cmp -s "$f" "$dir/pario/ext32.$name"; then
        echo "same bytes: ext32.$name"; right=$right${right:+,}$name
      elif ! EXT32_ONLY=$name "$exe" check "$dir/native" "$np" >/dev/null 2>&1 &&
           EXT32_ONLY=$name "$exe" check "$dir/pario" "$np"; then
        echo "  ext32.$name: the native MPI-IO departs from the standard's bytes; pario follows the standard"
      else
        echo "DIFFERENT: $f and $dir/pario/ext32.$name"; status=1
      fi
    done
    # pario reads back what the native MPI-IO wrote right
    EXT32_ONLY=$right "$run" "$flavour" "$np" --pario "$lib" "$exe" read "$dir/native"
    exit $status ;;
  cross)
    exe2=$7 lib2=$8 flavour2=$9
    if [ ! -x "$exe2" ] || [ ! -f "$lib2" ]; then
      echo "skipped: no $flavour2 build tree beside this one ($exe2)"; exit 0
    fi
    mkdir -p "$dir/a" "$dir/b"
    "$run" "$flavour" "$np" --pario "$lib" "$exe" write "$dir/a"
    "$run" "$flavour2" "$np" --pario "$lib2" "$exe2" read "$dir/a"
    "$run" "$flavour2" "$np" --pario "$lib2" "$exe2" write "$dir/b"
    "$run" "$flavour" "$np" --pario "$lib" "$exe" read "$dir/b"
    for f in "$dir"/a/ext32.*; do cmp "$f" "$dir/b/$(basename "$f")"; done
    echo "cross: $flavour -> $flavour2 and back, same bytes from both" ;;
  *) echo "run-ext32.sh: unknown mode $mode" >&2; exit 2 ;;
esac

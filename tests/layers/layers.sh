# The layer graph of src/ (docs/design.md, "Include rules"), read by check-includes.sh and
# check-symbols.sh: each layer lists the layers it may use (include, call). core/common.h and
# what it declares (errors, logging), the helpers every layer uses, are usable from anywhere.
# shellcheck disable=SC2034 # used by the scripts that source this file
declare -A allowed=(
  [api]="api tracelayer async sharedfp collective core view driver rio trace include" # rio: its checksums (rio/checksum.h, pure functions) for local files
  [tracelayer]="tracelayer core view driver trace"
  [async]="async collective core view driver trace"
  [sharedfp]="sharedfp core view driver trace"
  [collective]="collective core view driver rio trace" # rio: the read window rule (rio/window.h)
  [core]="core view driver trace include rio" # rio: the read window's rule (rio/window.h, pure, shared with the server)
  [view]="view trace"
  [driver]="driver rio trace"
  [rio]="rio"
  [trace]="trace"
  [remote]="remote core view driver rio trace"
  [include]="include"
)
may_use() { case " ${allowed[$1]} " in *" $2 "*) return 0 ;; *) return 1 ;; esac; }

# device-prologue.sh: sourced by this folder's scripts on the device, from the repo root: the
# carried packages unpacked, the kernel cache kept in build/, fabench built, and $slug set:
# the results folder's name for cuda:0, its device name in lower case with every run of
# other characters made one '-'.
source .deps/unpack-debs.sh
export FABENCH_CACHE=$PWD/build/kcache PYTHONUNBUFFERED=1
make -j16 all >/dev/null 2>&1 || { make all 2>&1 | tail -n 20; exit 1; }
slug=$(build/fabench devices --list | awk -F'\t' '$1=="cuda:0"{print $3}' | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//')

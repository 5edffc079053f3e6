#!/usr/bin/env bash
# ensure-deps.sh build|test|run|fuzz|slurm: checks what fabench needs on this machine (by compiling
# and probing, so headers unpacked elsewhere and named by CPATH count too), installs what
# is missing with apt-get when root, else prints the exact command and exits 2.
# FABENCH_OFFLINE=1 (a machine without a package mirror): optional packages are only named.
set -u
mode=${1:-build}
CC=${CC:-cc}
need=()
want=() # installed when the distribution has them; the tests that need them skip otherwise
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_header() { printf '#include <%s>\n' "$1" | "$CC" -E -x c - >/dev/null 2>&1; }
have_lib() { printf 'int main(void){return 0;}\n' | "$CC" -x c - -o /dev/null "-l$1" >/dev/null 2>&1; }
have_icd() {
    local d
    for d in ${OCL_ICD_VENDORS:-} /etc/OpenCL/vendors; do
        [ -d "$d" ] && ls "$d"/*.icd >/dev/null 2>&1 && return 0
        [ -f "$d" ] && return 0
    done
    return 1
}

if ! have_cmd "$CC" || ! have_cmd make; then need+=(build-essential); fi
if have_cmd "$CC"; then
    { have_header csv.h && have_lib csv; } || need+=(libcsv-dev)
    have_header CL/cl.h || need+=(opencl-c-headers)
fi
if [ "$mode" = test ] || [ "$mode" = run ]; then
    # the ICD loader (dlopen'd at run time) and, for machines without a GPU, PoCL
    { ldconfig -p 2>/dev/null | grep -q 'libOpenCL.so.1 ' || have_lib OpenCL; } || need+=(ocl-icd-libopencl1)
    have_icd || need+=(pocl-opencl-icd)
fi
if [ "$mode" = test ]; then
    if have_cmd "$CC"; then { have_header cmocka.h && have_lib cmocka; } || need+=(libcmocka-dev); fi
    have_cmd python3 || need+=(python3)
    have_cmd valgrind || need+=(valgrind) # make valgrind (CI)
    # tests/test_hiprtc.c: HIPRTC (inside libamdhip64 on ROCm 5) for gfx90a; hipcc (ROCm's
    # clang, its device libraries and llvm-objdump) for gfx940, which ROCm 5.2's HIPRTC lacks
    { ldconfig -p 2>/dev/null | grep -q 'libamdhip64\.so' || [ -e /opt/rocm/lib/libamdhip64.so ]; } || want+=(libamdhip64-dev)
    { have_cmd hipcc || [ -x /opt/rocm/bin/hipcc ]; } || want+=(hipcc)
fi
if [ "$mode" = run ]; then
    # figures: without gnuplot (a GPU node without network, say) run.sh still measures and
    # says so; `make plots` renders them later wherever gnuplot is
    have_cmd gnuplot || want+=(gnuplot-nox)
fi
if [ "$mode" = slurm ]; then
    # tests/slurm.sh's private one-node cluster: the controller, the node daemon (and with
    # them sbatch, squeue, scancel) and munge for their authentication
    PATH=$PATH:/usr/sbin:/sbin
    have_cmd slurmctld || need+=(slurmctld)
    have_cmd slurmd || need+=(slurmd)
    { have_cmd munged && have_cmd mungekey; } || need+=(munge)
fi
if [ "$mode" = fuzz ]; then
    # make fuzz: clang with libFuzzer and the address/undefined sanitizers' runtimes
    if ! have_cmd clang; then
        need+=(clang libclang-rt-dev)
    elif ! printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){return 0;}\n' |
            clang -fsanitize=fuzzer,address,undefined -x c - -o /dev/null >/dev/null 2>&1; then
        v=$(clang -dumpversion 2>/dev/null)
        need+=("libclang-rt-${v%%.*}-dev")
    fi
fi
# optional packages, best effort: the HIP compile tests' (Debian 12 has ROCm 5.2's; elsewhere
# those tests skip) and gnuplot for run.sh's figures
install_wanted() {
    [ ${#want[@]} -eq 0 ] && return 0
    if ! have_cmd apt-get || [ "$(id -u)" != 0 ] || [ -n "${FABENCH_OFFLINE:-}" ]; then
        echo "fabench: optional (HIP compile tests, figures): ${want[*]} (Debian package names)" >&2
        return 0
    fi
    echo "fabench: installing ${want[*]} (optional)" >&2
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -qq --no-install-recommends "${want[@]}" >>/tmp/fabench-apt.log 2>&1; then
        apt-get update -qq >>/tmp/fabench-apt.log 2>&1
        apt-get install -y -qq --no-install-recommends "${want[@]}" >>/tmp/fabench-apt.log 2>&1 ||
            echo "fabench: could not install ${want[*]}; what needs them skips (log: /tmp/fabench-apt.log)" >&2
    fi
    return 0
}

if [ ${#need[@]} -eq 0 ]; then install_wanted; exit 0; fi

if ! have_cmd apt-get; then
    echo "fabench needs: ${need[*]} (Debian package names); install them with your package manager" >&2
    exit 2
fi
if [ "$(id -u)" != 0 ]; then
    echo "fabench needs packages that are not installed. Run:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${need[*]}" >&2
    exit 2
fi
echo "fabench: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq "${need[@]}" >/tmp/fabench-apt.log 2>&1; then
    apt-get update -qq >>/tmp/fabench-apt.log 2>&1
    if ! apt-get install -y -qq "${need[@]}" >>/tmp/fabench-apt.log 2>&1; then
        tail -20 /tmp/fabench-apt.log >&2
        echo "fabench: apt-get install ${need[*]} failed (log: /tmp/fabench-apt.log)" >&2
        exit 2
    fi
fi
install_wanted
exit 0

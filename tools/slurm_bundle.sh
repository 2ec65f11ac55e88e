#!/usr/bin/env bash
# Carry this machine's Slurm and munge to a machine that has neither and no network (a lent GPU machine).
#
#   tools/slurm_bundle.sh pack DIR      copy the daemons, client commands, plugins and the libraries they
#                                       need from this machine (Debian's slurm-wlm and munge) into DIR
#   tools/slurm_bundle.sh install DIR   put them where Slurm looks for them on the target: binaries and
#                                       plugins only where nothing is installed yet, and only the libraries
#                                       its loader cannot already find (in a folder of their own)
# Then tests/slurm/start-cluster.sh starts a one-node cluster there as usual.
set -euo pipefail
mode=${1:?usage: slurm_bundle.sh pack|install DIR}
dir=$(realpath -m "${2:?usage: slurm_bundle.sh pack|install DIR}")
BINS="sbin/slurmctld sbin/slurmd sbin/slurmstepd sbin/munged sbin/mungekey bin/sbatch bin/squeue bin/sacct
      bin/scancel bin/sinfo bin/scontrol bin/srun bin/munge bin/unmunge"
PLUGINS=/usr/lib/x86_64-linux-gnu/slurm-wlm
LIBS="libmunge.so.2 libhwloc.so.15 libnuma.so.1 liblz4.so.1 libpam.so.0 libpam_misc.so.0 libcap-ng.so.0
      libaudit.so.1 libudev.so.1 libgcrypt.so.20 libgpg-error.so.0 libjson-c.so.5 libbz2.so.1.0"

# plugins a one-node cluster never loads (REST API, PMIx, burst buffers, databases, Cray)
SKIP='^(openapi_|mpi_pmix|burst_buffer_|node_features_knl|slurmctld_nonstop|accounting_storage_(mysql|slurmdbd)|jobcomp_(elasticsearch|kafka|mysql|lua)|acct_gather_profile_(hdf5|influxdb)|select_cons_res|cli_filter_lua|job_submit_lua)'

if [ "$mode" = pack ]; then
  work=$(mktemp -d)
  mkdir -p "$work/bin" "$work/sbin" "$work/plugins" "$work/lib"
  for b in $BINS; do cp -L "/usr/$b" "$work/$b"; done
  for p in "$PLUGINS"/*.so; do
    basename "$p" | grep -qE "$SKIP" || cp -L "$p" "$work/plugins/"
  done
  for l in $LIBS; do cp -L "/lib/x86_64-linux-gnu/$l" "$work/lib/"; done
  mkdir -p "$dir"
  tar -C "$work" -czf "$dir/slurm-bundle.tar.gz" .
  rm -rf "$work"
  du -sh "$dir/slurm-bundle.tar.gz"
  exit 0
fi

[ "$(id -u)" = 0 ] || { echo "install needs root" >&2; exit 3; }
src=$dir
dir=$(mktemp -d)
tar -C "$dir" -xzf "$src/slurm-bundle.tar.gz"
for b in $BINS; do [ -e "/usr/$b" ] || cp "$dir/$b" "/usr/$b"; done
mkdir -p "$PLUGINS"
cp -n "$dir"/plugins/*.so "$PLUGINS/"
mkdir -p /usr/local/lib/slurm-bundle
for l in $(ls "$dir/lib"); do
  ldconfig -p | grep -q "^\s*$l " || cp "$dir/lib/$l" /usr/local/lib/slurm-bundle/
done
echo /usr/local/lib/slurm-bundle > /etc/ld.so.conf.d/zz-slurm-bundle.conf
ldconfig
mkdir -p /etc/munge /var/log/munge /var/lib/munge /run/munge
[ -f /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; chmod 0400 /etc/munge/munge.key; }
for b in slurmctld slurmd munged sbatch; do
  command -v $b >/dev/null || PATH=$PATH:/usr/sbin command -v $b >/dev/null || { echo "missing $b" >&2; exit 3; }
done
if ldd /usr/sbin/slurmctld | grep -q "not found"; then ldd /usr/sbin/slurmctld | grep "not found" >&2; exit 3; fi
echo "slurm installed: $(PATH=$PATH:/usr/sbin slurmctld -V)"

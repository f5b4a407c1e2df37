#!/usr/bin/env bash
# `cmake --install` of a finished build into a scratch prefix, then a C project built against it
# twice: through find_package(aiter_compat) and through pkg-config, each run once (a CPU call).
# Usage: check_install.sh BUILD_DIR WORK_DIR VERSION CMAKE C_COMPILER GENERATOR  (ctest passes them)
set -euo pipefail
build=$1 work=$2 version=$3 cmake=$4 cc=$5 generator=$6
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }

echo "== installed files"
(cd "$prefix" && find . -type f -o -type l | sort)
libdir=$(dirname "$(find "$prefix" -name 'libaiter_compat.so' | head -1)")
[ -n "$libdir" ] || { echo "no libaiter_compat.so under $prefix"; exit 1; }
soname=$(readelf -d "$libdir/libaiter_compat.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "SONAME $soname"
[[ $soname =~ ^libaiter_compat\.so\.[0-9]+$ ]] || { echo "unexpected SONAME '$soname'"; exit 1; }

echo "== find_package(aiter_compat $version EXACT)"
"$cmake" -S "$here/consumer" -B "$work/cmake-build" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_PREFIX_PATH="$prefix" -DEXPECTED_VERSION="$version" > "$work/configure.log" 2>&1 \
  || { cat "$work/configure.log"; exit 1; }
"$cmake" --build "$work/cmake-build" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$work/cmake-build/consumer"

echo "== pkg-config aiter_compat"
export PKG_CONFIG_PATH=$libdir/pkgconfig
found=$(pkg-config --modversion aiter_compat)
[ "$found" = "$version" ] || { echo "pkg-config reports version '$found', expected '$version'"; exit 1; }
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
"$cc" -o "$work/consumer-pc" "$here/consumer/consumer.c" $(pkg-config --cflags --libs aiter_compat) -lm
LD_LIBRARY_PATH=$libdir "$work/consumer-pc"

# bench/remote/lib.sh — what the remote-image benchmarks share. Source it:
#   . "$here/lib.sh"
#
#   ms T0 T1       milliseconds between two $EPOCHREALTIME readings, 0.1 ms
#   median         of the numbers on stdin, one a line (of an even count,
#                  the mean of the middle two)
ms() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", (b-a)*1000}'; }
median() { sort -n | awk '{a[NR]=$1} END{if (NR%2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }

# bash: pipelines, subshells, command substitution, background jobs
set -e
total=0
for i in $(seq 1 40); do
	n=$( (echo "$i"; seq 1 "$i") | sort -rn | head -1)
	total=$((total + n))
done
echo "total $total"
{ seq 1 5000 | awk '{s += $1} END {print s}'; } >bg1.out &
(for w in alpha beta gamma; do echo "$w" | rev; done) | sort >bg2.out &
wait
cat bg1.out bg2.out
printf '%s\n' one two three | while read -r w; do echo "${#w}:$w"; done | tr a-z A-Z
echo "$(echo "$(echo nested)") $(( $(seq 1 100 | wc -l) * 2 ))"

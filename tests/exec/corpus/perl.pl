# perl: a big hash, a sort, and forked children that report through pipes
use strict;
use warnings;
use Digest::MD5 qw(md5_hex);
my %h;
$h{ ($_ * 7919) % 100003 } .= "v$_" for 1 .. 60000;
my @keys = sort { $a <=> $b } keys %h;
print scalar(@keys), " keys, digest ", md5_hex(join ",", map { "$_=$h{$_}" } @keys[0 .. 999]), "\n";
my @kids;
for my $k (1 .. 4) {
	pipe(my $r, my $w) or die "pipe: $!";
	my $pid = fork() // die "fork: $!";
	if ($pid == 0) {
		close $r;
		my $s = 0;
		$s += length($h{$_}) for grep { $_ % 4 == $k - 1 } @keys;
		print $w "$k:$s\n";
		exit 0;
	}
	close $w;
	push @kids, [$pid, $r];
}
for my $c (@kids) {
	my $fh = $c->[1];
	print scalar <$fh>;
	waitpid($c->[0], 0);
}

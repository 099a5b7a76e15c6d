package signature

import "strings"

// matchPattern reports whether s matches the OpenSSH pattern p (PATTERNS
// in ssh_config(5)): '*' matches any run of bytes, empty too, '?' any one
// byte, every other byte itself (case matters). It runs in time
// len(s)*len(p) at worst, never more: a backtracking matcher on a file's
// patterns could be made to take exponential time.
func matchPattern(s, p string) bool {
	si, pi := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			si++
			pi++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			// Let the last '*' take one byte more.
			mark++
			si = mark
			pi = star + 1
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchPatternList matches s against a comma-separated OpenSSH
// pattern-list, as match_pattern_list in OpenSSH's match.c does: 1 when a
// pattern matches and no negated one ("!pattern") does, -1 when a negated
// pattern matches, 0 when nothing matches.
func matchPatternList(s, list string) int {
	positive := false
	for _, p := range strings.Split(list, ",") {
		negated := false
		if strings.HasPrefix(p, "!") {
			negated, p = true, p[1:]
		}
		if matchPattern(s, p) {
			if negated {
				return -1
			}
			positive = true
		}
	}
	if positive {
		return 1
	}
	return 0
}

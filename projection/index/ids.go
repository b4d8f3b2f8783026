package index

// Record and event ids are UUIDs in their canonical form in practice: 36
// bytes, 48 with their allocation. The index keeps such an id as its 16
// bytes (unless the first is 0), which saves 64 bytes a record; any other
// id is kept as it is, or, if it could be taken for a packed one (it has
// 16 bytes or starts with a NUL byte), after a NUL byte. So a packed id of
// 16 bytes that does not start with NUL is a UUID, one that starts with NUL
// is the rest. Every comparison the index makes is between packed ids.

// hexDigits are the lowercase hex digits.
const hexDigits = "0123456789abcdef"

// packID returns the form of id the index keeps, with bytes of its own.
func packID[S text](id S) string {
	if len(id) == 36 {
		var b [16]byte
		if decodeUUID(id, &b) && b[0] != 0 {
			return string(b[:])
		}
	}
	if len(id) == 16 || len(id) > 0 && id[0] == 0 {
		return "\x00" + string(id)
	}
	return string(id)
}

// decodeUUID reads a canonical lowercase UUID into b.
func decodeUUID[S ~string | ~[]byte](s S, b *[16]byte) bool {
	j := 0
	for i := 0; i < 36; {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
			i++
			continue
		}
		hi, lo := unhex(s[i]), unhex(s[i+1])
		if hi < 0 || lo < 0 {
			return false
		}
		b[j] = byte(hi<<4 | lo)
		i, j = i+2, j+1
	}
	return true
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	}
	return -1
}

// unpackID returns the id p is the packed form of.
func unpackID(p string) string {
	switch {
	case len(p) > 0 && p[0] == 0:
		return p[1:]
	case len(p) == 16:
		var out [36]byte
		eachUUIDByte(p, func(i int, c byte) { out[i] = c })
		return string(out[:])
	}
	return p
}

// eachUUIDByte calls f with each byte of the canonical form of the UUID
// whose 16 bytes p holds.
func eachUUIDByte(p string, f func(i int, c byte)) {
	i := 0
	for j := range 16 {
		if j == 4 || j == 6 || j == 8 || j == 10 {
			f(i, '-')
			i++
		}
		f(i, hexDigits[p[j]>>4])
		f(i+1, hexDigits[p[j]&15])
		i += 2
	}
}

// tieOf is idTie of the id p is the packed form of, without unpacking it.
func tieOf(p string) uint64 {
	if len(p) != 16 || p[0] == 0 {
		return idTie(unpackID(p))
	}
	h := uint64(14695981039346656037)
	eachUUIDByte(p, func(_ int, c byte) {
		h ^= uint64(c)
		h *= 1099511628211
	})
	return h
}

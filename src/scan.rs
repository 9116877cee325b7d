//! Byte searches (memchr, memmem) that never ask the CPU what it supports.
//!
//! The memchr crate's top-level functions choose between AVX2 and SSE2 at
//! their first call through std's feature detection, which runs a dozen
//! CPUID instructions. Under a hypervisor each one traps (~3.8 µs on the
//! VMs we benchmark on): ~45 µs on the path of every `antiopa template`,
//! 1.3 % of the main thread's time on a median corpus chart. These
//! searches use the crate's SSE2 routines, which every x86-64 CPU has, so
//! nothing is detected; the haystacks of a render (a line of YAML, a
//! template, a rendered file) are short enough that AVX2 would gain little.
//! Elsewhere they are the crate's own functions.

#[cfg(target_arch = "x86_64")]
use memchr::arch::x86_64::sse2;

/// The first `needle` in `haystack`.
pub fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(s) = sse2::memchr::One::new(needle) {
        return s.find(haystack);
    }
    memchr::memchr(needle, haystack)
}

/// The last `needle` in `haystack`.
pub fn memrchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(s) = sse2::memchr::One::new(needle) {
        return s.rfind(haystack);
    }
    memchr::memrchr(needle, haystack)
}

/// The part of slash-separated path `p` after its last `/` (all of `p`
/// without one): base names are taken of every chart file and template,
/// often several times, and `rsplit('/')` goes through std's portable
/// `memrchr`, some 170 instructions for a short path.
pub fn after_last_slash(p: &str) -> &str {
    match memrchr(b'/', p.as_bytes()) {
        // A `/` is one byte of its own in UTF-8: the cut is a boundary.
        Some(i) => &p[i + 1..],
        None => p,
    }
}

/// The first `a` or `b` in `haystack`.
pub fn memchr2(a: u8, b: u8, haystack: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(s) = sse2::memchr::Two::new(a, b) {
        return s.find(haystack);
    }
    memchr::memchr2(a, b, haystack)
}

/// The first `a`, `b` or `c` in `haystack`.
pub fn memchr3(a: u8, b: u8, c: u8, haystack: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(s) = sse2::memchr::Three::new(a, b, c) {
        return s.find(haystack);
    }
    memchr::memchr3(a, b, c, haystack)
}

/// Where `needle` first occurs in `haystack` (an empty needle at 0).
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    Finder::new(needle).find(haystack)
}

/// Every non-overlapping occurrence of a non-empty `needle` in `haystack`,
/// from the start.
pub fn find_iter<'h>(haystack: &'h [u8], needle: &'h [u8]) -> impl Iterator<Item = usize> + 'h {
    let finder = Finder::new(needle);
    let mut pos = 0;
    std::iter::from_fn(move || {
        if needle.is_empty() || pos > haystack.len() {
            return None;
        }
        let at = pos + finder.find(&haystack[pos..])?;
        pos = at + needle.len();
        Some(at)
    })
}

/// A substring searcher for one needle, set up once for every search
/// with it.
struct Finder<'n> {
    needle: &'n [u8],
    /// The packed-pair searcher, for needles of two bytes or more.
    #[cfg(target_arch = "x86_64")]
    pair: Option<sse2::packedpair::Finder>,
    /// For haystacks too short for the packed-pair searcher (it has a
    /// minimum length). Portable and detection-free.
    #[cfg(target_arch = "x86_64")]
    short: memchr::arch::all::rabinkarp::Finder,
}

impl<'n> Finder<'n> {
    fn new(needle: &'n [u8]) -> Finder<'n> {
        Finder {
            needle,
            #[cfg(target_arch = "x86_64")]
            pair: sse2::packedpair::Finder::new(needle),
            #[cfg(target_arch = "x86_64")]
            short: memchr::arch::all::rabinkarp::Finder::new(needle),
        }
    }

    fn find(&self, haystack: &[u8]) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(f) = &self.pair
                && haystack.len() >= f.min_haystack_len()
            {
                return f.find(haystack, self.needle);
            }
            if let [byte] = self.needle {
                return memchr(*byte, haystack);
            }
            self.short.find(haystack, self.needle)
        }
        #[cfg(not(target_arch = "x86_64"))]
        memchr::memmem::find(haystack, self.needle)
    }
}

/// The pieces of `haystack` between the occurrences of a non-empty `sep`,
/// as Go's `strings.Split` gives them (an empty haystack is one empty piece,
/// a trailing separator leaves an empty last piece).
pub fn split<'h>(haystack: &'h [u8], sep: &'h [u8]) -> impl Iterator<Item = &'h [u8]> + 'h {
    let mut found = find_iter(haystack, sep);
    let mut last = Some(0);
    std::iter::from_fn(move || {
        let from = last?;
        match found.next() {
            Some(at) => {
                last = Some(at + sep.len());
                Some(&haystack[from..at])
            }
            None => {
                last = None;
                Some(&haystack[from..])
            }
        }
    })
}

/// `haystack` with every occurrence of a non-empty `needle` replaced by
/// `with`.
pub fn replace(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut last = 0;
    for at in find_iter(haystack, needle) {
        out.extend_from_slice(&haystack[last..at]);
        out.extend_from_slice(with);
        last = at + needle.len();
    }
    out.extend_from_slice(&haystack[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each search against the obvious one, over haystacks around the
    /// lengths where the vector routines switch strategy.
    #[test]
    fn searches_agree_with_naive_ones() {
        let alphabet = b"ab-\n{}";
        for len in [0usize, 1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200] {
            // A deterministic mix of the alphabet's bytes.
            let hay: Vec<u8> = (0..len)
                .map(|i| alphabet[(i * 7 + i / 3) % alphabet.len()])
                .collect();
            for &n in alphabet.iter().chain(b"z") {
                assert_eq!(memchr(n, &hay), hay.iter().position(|&c| c == n));
                assert_eq!(memrchr(n, &hay), hay.iter().rposition(|&c| c == n));
                assert_eq!(
                    memchr2(n, b'z', &hay),
                    hay.iter().position(|&c| c == n || c == b'z')
                );
                assert_eq!(
                    memchr3(n, b'z', b'{', &hay),
                    hay.iter().position(|&c| c == n || c == b'z' || c == b'{')
                );
            }
            for needle in [&b"a"[..], b"ab", b"\n-", b"b-\n{", b"zz", b"{}a"] {
                let naive = |from: usize| {
                    hay[from..]
                        .windows(needle.len())
                        .position(|w| w == needle)
                        .map(|i| i + from)
                };
                assert_eq!(find(&hay, needle), naive(0), "{needle:?} in {len} bytes");
                let mut want = Vec::new();
                let mut from = 0;
                while let Some(at) = naive(from) {
                    want.push(at);
                    from = at + needle.len();
                }
                assert_eq!(find_iter(&hay, needle).collect::<Vec<_>>(), want);
                let mut pieces = Vec::new();
                let mut from = 0;
                for &at in &want {
                    pieces.push(&hay[from..at]);
                    from = at + needle.len();
                }
                pieces.push(&hay[from..]);
                assert_eq!(split(&hay, needle).collect::<Vec<_>>(), pieces);
                assert_eq!(replace(&hay, needle, b"<>"), pieces.join(&b"<>"[..]));
            }
        }
        for (path, base) in [
            ("a", "a"),
            ("", ""),
            ("t/x.yaml", "x.yaml"),
            ("web/charts/db/templates/_helpers.tpl", "_helpers.tpl"),
            ("dir/", ""),
            ("/é/ü", "ü"),
        ] {
            assert_eq!(after_last_slash(path), base, "{path}");
        }
        assert_eq!(find(b"abc", b""), Some(0));
        assert_eq!(split(b"", b",").collect::<Vec<_>>(), [&b""[..]]);
        assert_eq!(
            split(b"a,b,", b",").collect::<Vec<_>>(),
            [&b"a"[..], b"b", b""]
        );
    }
}

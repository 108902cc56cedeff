//! Deterministic stand-ins for the identifiers a real cluster generates (UIDs, commit SHAs), so
//! simulated objects look real and stay identical from run to run.

/// 64-bit FNV-1a over `seed`, started from `basis`.
fn fnv1a(seed: &str, basis: u64) -> u64 {
    seed.bytes().fold(basis, |hash, b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn hex(seed: &str, chars: usize) -> String {
    let mut out = String::with_capacity(chars + 16);
    let mut round: u64 = 0;
    while out.len() < chars {
        let word = fnv1a(seed, 0xcbf2_9ce4_8422_2325 ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        out.push_str(&format!("{word:016x}"));
        round += 1;
    }
    out.truncate(chars);
    out
}

/// A Kubernetes-style UID (`8-4-4-4-12` hex) derived from `seed`.
pub(crate) fn uid(seed: &str) -> String {
    let h = hex(seed, 32);
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// A 40-hex-digit Git commit SHA derived from `seed`.
pub(crate) fn sha(seed: &str) -> String {
    hex(seed, 40)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_stable_distinct_and_well_formed() {
        assert_eq!(uid("a"), uid("a"));
        assert_ne!(uid("a"), uid("b"));
        assert_eq!(uid("a").len(), 36);
        let s = sha("a");
        assert_eq!(s.len(), 40);
        assert!(s.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}

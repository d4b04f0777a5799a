//! Key generators of YCSB: the zipfian generator of Gray et al. (θ = 0.99),
//! its FNV-scrambled form, and uniform; with YCSB's key naming
//! ("user" + fnv64(item)). Written by hand because the point is to match
//! YCSB's exact definitions (no crate implements them), so that our numbers
//! are comparable with the papers'.

use rand::Rng;

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1 over the 8 little-endian bytes, as a
/// non-negative Java long.
pub fn fnv_hash64(mut val: u64) -> u64 {
    let mut hash = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    (hash as i64).wrapping_abs() as u64
}

/// The zipfian distribution over `0..items` (rank 0 most popular).
#[derive(Debug, Clone)]
pub struct ZipfianGenerator {
    items: u64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    half_pow_theta: f64,
}

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

impl ZipfianGenerator {
    pub fn new(items: u64, theta: f64) -> ZipfianGenerator {
        assert!(items >= 2, "a zipfian needs at least two items");
        let zeta2 = zeta(2, theta);
        let zetan = zeta(items, theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        ZipfianGenerator { items, alpha: 1.0 / (1.0 - theta), zetan, eta, half_pow_theta: 0.5f64.powf(theta) }
    }

    /// A rank in `0..items`.
    pub fn next_rank(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1;
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }
}

/// How keys are drawn.
#[derive(Debug, Clone)]
pub enum KeyChooser {
    /// YCSB's scrambled zipfian: item = fnv64(rank) mod items.
    ScrambledZipfian(ZipfianGenerator),
    Uniform {
        items: u64,
    },
}

impl KeyChooser {
    pub fn zipfian(items: u64) -> KeyChooser {
        KeyChooser::ScrambledZipfian(ZipfianGenerator::new(items, ZIPFIAN_CONSTANT))
    }

    pub fn uniform(items: u64) -> KeyChooser {
        KeyChooser::Uniform { items }
    }

    /// An item number in `0..items`.
    pub fn next_item(&self, rng: &mut impl Rng) -> u64 {
        match self {
            KeyChooser::ScrambledZipfian(z) => fnv_hash64(z.next_rank(rng)) % z.items,
            KeyChooser::Uniform { items } => rng.random_range(0..*items),
        }
    }
}

/// Writes YCSB's key for `item` ("user" + fnv64(item)) into `buf` without
/// allocating; returns the key's length.
pub fn write_key(item: u64, buf: &mut [u8; 32]) -> usize {
    buf[..4].copy_from_slice(b"user");
    let mut n = fnv_hash64(item);
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let len = digits.len() - i;
    buf[4..4 + len].copy_from_slice(&digits[i..]);
    4 + len
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    #[test]
    fn fnv_matches_ycsb_reference_values() {
        // FNV-1 over eight zero bytes is the offset basis times prime^8; for
        // 0x01 the first octet is xored in before the first multiplication.
        let zero = (0..8).fold(FNV_OFFSET_BASIS_64, |h, _| h.wrapping_mul(FNV_PRIME_64));
        assert_eq!(fnv_hash64(0), (zero as i64).wrapping_abs() as u64);
        let one =
            (1..8).fold((FNV_OFFSET_BASIS_64 ^ 1).wrapping_mul(FNV_PRIME_64), |h, _| h.wrapping_mul(FNV_PRIME_64));
        assert_eq!(fnv_hash64(1), (one as i64).wrapping_abs() as u64);
        assert_ne!(fnv_hash64(1), fnv_hash64(2));
        assert!(fnv_hash64(u64::MAX) <= i64::MAX as u64);
    }

    #[test]
    fn zipfian_is_skewed_like_theta_099() {
        let z = ZipfianGenerator::new(1000, ZIPFIAN_CONSTANT);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut counts = vec![0u32; 1000];
        let n = 200_000;
        for _ in 0..n {
            counts[z.next_rank(&mut rng) as usize] += 1;
        }
        // P(rank 0) = 1 / zeta(1000, 0.99) ≈ 0.133; rank 1 is about half of it.
        let p0 = f64::from(counts[0]) / f64::from(n);
        assert!((p0 - 1.0 / zeta(1000, 0.99)).abs() < 0.01, "p0 = {p0}");
        let ratio = f64::from(counts[0]) / f64::from(counts[1]);
        assert!((ratio - 2f64.powf(0.99)).abs() < 0.15, "ratio = {ratio}");
        assert!(counts[999] < counts[0] / 100);
    }

    #[test]
    fn scrambling_spreads_hot_items_and_uniform_covers_the_range() {
        let mut rng = SmallRng::seed_from_u64(1);
        let z = KeyChooser::zipfian(1000);
        let hot: Vec<u64> = (0..3).map(|r| fnv_hash64(r) % 1000).collect();
        assert!(hot.windows(2).all(|w| w[0] != w[1]), "hot ranks map to distinct items");
        let mut seen = [false; 100];
        let u = KeyChooser::uniform(100);
        for _ in 0..10_000 {
            seen[u.next_item(&mut rng) as usize] = true;
            assert!(z.next_item(&mut rng) < 1000);
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn seeds_reproduce_and_keys_look_like_ycsb() {
        let z = KeyChooser::zipfian(10_000);
        let draw = |seed| {
            let mut rng = SmallRng::seed_from_u64(seed);
            (0..100).map(|_| z.next_item(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
        let mut buf = [0u8; 32];
        let len = write_key(42, &mut buf);
        assert_eq!(&buf[..len], format!("user{}", fnv_hash64(42)).as_bytes());
    }
}

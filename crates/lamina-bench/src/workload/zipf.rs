//! The zipfian distribution YCSB uses for its request keys, by the method of Gray et al.,
//! "Quickly generating billion-record synthetic databases" (SIGMOD 1994), with YCSB's
//! constant 0.99 and its incremental update of zeta when the item count grows (workloads
//! D and E insert while they run).

use rand::Rng;

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Most items (zeta is computed in O(items) at construction).
pub const ITEMS_MAX: u64 = 1 << 32;

/// Draws item numbers in `0..items`; item 0 is the most popular.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// A distribution over `items` (at least 1) items with YCSB's constant.
    pub fn new(items: u64) -> Self {
        assert!((1..=ITEMS_MAX).contains(&items), "zipfian over {items} items");
        let theta = ZIPFIAN_CONSTANT;
        let zetan = (1..=items).map(|i| 1.0 / (i as f64).powf(theta)).sum();
        let mut z = Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2: 1.0 + 0.5f64.powf(theta),
            zetan,
            eta: 0.0,
        };
        z.eta = z.compute_eta();
        z
    }

    fn compute_eta(&self) -> f64 {
        (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// Number of items.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// Extends the distribution to `items` items (never shrinks).
    pub fn grow_to(&mut self, items: u64) {
        assert!(items <= ITEMS_MAX, "zipfian over {items} items");
        if items <= self.items {
            return;
        }
        for i in self.items + 1..=items {
            self.zetan += 1.0 / (i as f64).powf(self.theta);
        }
        self.items = items;
        self.eta = self.compute_eta();
    }

    /// Next item number.
    pub fn sample(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.zeta2 {
            return 1.min(self.items - 1);
        }
        let item = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        item.min(self.items - 1)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn skew_matches_zipf_law() {
        let items = 1000;
        let z = Zipfian::new(items);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut counts = vec![0u64; items as usize];
        let n = 400_000u32;
        for _ in 0..n {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        // P(item 0) = 1 / zeta(n).
        let p0 = counts[0] as f64 / f64::from(n);
        assert!((p0 / (1.0 / z.zetan) - 1.0).abs() < 0.05, "p0 {p0}");
        // Rank 1 vs rank 2: 2^0.99.
        let ratio = counts[0] as f64 / counts[1] as f64;
        assert!((ratio - 2f64.powf(0.99)).abs() < 0.15, "ratio {ratio}");
        // Heavy head: the top 10% of items take well over half of the requests.
        let head: u64 = counts[..100].iter().sum();
        assert!(head as f64 / f64::from(n) > 0.6, "head share {}", head as f64 / f64::from(n));
        assert!(counts[999] < counts[0] / 100);
    }

    #[test]
    fn growing_matches_fresh() {
        let mut grown = Zipfian::new(10);
        grown.grow_to(5000);
        let fresh = Zipfian::new(5000);
        assert!((grown.zetan - fresh.zetan).abs() < 1e-9);
        assert!((grown.eta - fresh.eta).abs() < 1e-9);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert!((0..10_000).all(|_| grown.sample(&mut rng) < 5000));
    }
}

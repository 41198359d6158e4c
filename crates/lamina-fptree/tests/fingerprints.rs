//! Section 4.2: with fingerprints, a successful search probes about one key, as Figure 4's
//! formula predicts for the leaves' actual fill; a linear scan would probe (m + 1) / 2.
//! The measurement matches the exact model (`exact_expected_probes`) more closely than
//! Figure 4's formula, which is slightly optimistic (see `fingerprint.rs`).

mod common;

use common::new_tree;
use lamina_fptree::FpTreeConfig;
use lamina_fptree::fingerprint::{exact_expected_probes, expected_probes};

#[test]
fn successful_searches_average_about_one_key_probe() {
    let (_, tree) = new_tree(16 << 20, FpTreeConfig::default());
    let n = 20_000u64;
    // A fixed pseudo-random order, so the leaves are split at varied points.
    let keys: Vec<Vec<u8>> = (0..n)
        .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20).to_be_bytes().to_vec())
        .collect();
    for key in &keys {
        tree.put(key, b"v").unwrap();
    }
    let before = tree.stats();
    for key in &keys {
        assert!(tree.get(key).unwrap().is_some());
    }
    let stats = tree.stats();
    let searches = stats.searches_found - before.searches_found;
    let probes = stats.key_probes_found - before.key_probes_found;
    assert_eq!(searches, n);
    let measured = probes as f64 / searches as f64;

    // Figure 4's E[T] for each leaf's fill m, weighted by the m keys searched in it.
    let fills = tree.leaf_fills().unwrap();
    assert_eq!(fills.iter().map(|&m| u64::from(m)).sum::<u64>(), n);
    let expected: f64 =
        fills.iter().map(|&m| f64::from(m) * expected_probes(m, 256)).sum::<f64>() / n as f64;
    let exact: f64 =
        fills.iter().map(|&m| f64::from(m) * exact_expected_probes(m, 256)).sum::<f64>() / n as f64;
    let linear: f64 =
        fills.iter().map(|&m| f64::from(m) * f64::from(m + 1) / 2.0).sum::<f64>() / n as f64;
    println!(
        "probes per successful search: measured {measured:.4}, Figure 4 {expected:.4}, exact \
         model {exact:.4}, linear scan {linear:.2} ({} leaves)",
        fills.len()
    );
    assert!((measured - expected).abs() < 0.05, "measured {measured}, Figure 4 {expected}");
    assert!((measured - exact).abs() < 0.01, "measured {measured}, exact model {exact}");
    assert!(measured < 1.1 && linear > 10.0);
}

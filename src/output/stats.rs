//! The statistics of `tracelake factors`: a proportion's Wilson interval, Fisher's exact
//! test of a 2×2 table, and the Benjamini–Hochberg adjustment of many p-values. The
//! distributions come from `statrs`; the tests check each against scipy's values.

use statrs::distribution::{ContinuousCDF, Discrete, Hypergeometric, Normal};

/// Whether a factor value held by `held` of `scored` sessions can be weighed: at least
/// `min_support` sessions hold it and at least as many (one, at the least) do not, since
/// a comparison with two sessions that lack a value rests on those two as much as a value
/// held by two rests on its holders.
pub fn supported(held: u64, scored: u64, min_support: u64) -> bool {
    held >= min_support && scored.saturating_sub(held) >= min_support.max(1)
}

/// The Wilson score interval of the proportion `k` of `n` at `confidence` (0.95 for
/// 95 %): unlike the normal approximation, it stays inside 0..1 and is sound for small
/// counts. `(0, 1)` for no observations.
pub fn wilson_interval(k: u64, n: u64, confidence: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = Normal::standard().inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    let (n, p) = (n as f64, k as f64 / n as f64);
    let denominator = 1.0 + z * z / n;
    let center = (p + z * z / (2.0 * n)) / denominator;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denominator;
    // At k = 0 (k = n) the bound is exactly 0 (1); in floating point it may miss by 1e-17.
    let low = if k == 0 { 0.0 } else { (center - half).max(0.0) };
    let high = if k as f64 == n { 1.0 } else { (center + half).min(1.0) };
    (low, high)
}

/// The two-sided p-value of Fisher's exact test for `[[a, b], [c, d]]`: the probability,
/// with the margins fixed, of every table at most as likely as this one (as scipy sums it,
/// with a relative tolerance of 1e-7 for ties).
pub fn fisher_exact(table: [[u64; 2]; 2]) -> f64 {
    let [[a, b], [c, d]] = table;
    let (total, successes, draws) = (a + b + c + d, a + c, a + b);
    let Ok(hypergeometric) = Hypergeometric::new(total, successes, draws) else {
        return 1.0;
    };
    let observed = hypergeometric.pmf(a);
    let low = (draws + successes).saturating_sub(total);
    let high = draws.min(successes);
    let p: f64 = (low..=high).map(|x| hypergeometric.pmf(x)).filter(|&p| p <= observed * (1.0 + 1e-7)).sum();
    // Far in the tail every term underflows, and a sum of none is -0.0.
    if p > 0.0 { p.min(1.0) } else { 0.0 }
}

/// A p- or q-value to `digits` places (`0.0123`), `1.2e-5` below 0.001, or `<1e-300`
/// where the tail's terms underflow.
pub fn probability_text(p: f64, digits: usize) -> String {
    if p >= 0.001 {
        format!("{p:.digits$}")
    } else if p > 0.0 {
        format!("{p:.1e}")
    } else {
        "<1e-300".to_owned()
    }
}

/// Benjamini–Hochberg adjusted p-values (q-values), in the order given: the false
/// discovery rate at which each would be called significant among all tested.
pub fn benjamini_hochberg(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let mut q = vec![1.0; m];
    let mut smallest_after = 1.0_f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        smallest_after = smallest_after.min(p_values[i] * m as f64 / (rank + 1) as f64);
        q[i] = smallest_after;
    }
    q
}

/// Cohen's kappa of two raters' yes/no verdicts, from how often they said (yes, yes),
/// (yes, no), (no, yes) and (no, no): their agreement beyond what chance gives. `None`
/// when chance alone agrees always (both always said the same one thing).
pub fn cohen_kappa(both_yes: u64, yes_no: u64, no_yes: u64, both_no: u64) -> Option<f64> {
    let n = (both_yes + yes_no + no_yes + both_no) as f64;
    let observed = (both_yes + both_no) as f64 / n;
    let (first_yes, second_yes) = ((both_yes + yes_no) as f64 / n, (both_yes + no_yes) as f64 / n);
    let chance = first_yes * second_yes + (1.0 - first_yes) * (1.0 - second_yes);
    (chance < 1.0).then(|| (observed - chance) / (1.0 - chance))
}

/// The area under the ROC curve of `scores` for the `positive` ones: the chance that a
/// positive scores above a negative, ties counting half (the Mann–Whitney statistic).
/// `None` without both kinds.
pub fn roc_auc(scores: &[f64], positive: &[bool]) -> Option<f64> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&i, &j| scores[i].total_cmp(&scores[j]));
    // Ranks from 1, ties sharing their average rank.
    let mut ranks = vec![0.0; scores.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start;
        while end + 1 < order.len() && scores[order[end + 1]] == scores[order[start]] {
            end += 1;
        }
        let rank = (start + end) as f64 / 2.0 + 1.0;
        order[start..=end].iter().for_each(|&i| ranks[i] = rank);
        start = end + 1;
    }
    let positives = positive.iter().filter(|&&p| p).count() as f64;
    let negatives = positive.len() as f64 - positives;
    if positives == 0.0 || negatives == 0.0 {
        return None;
    }
    let positive_ranks: f64 = ranks.iter().zip(positive).filter(|(_, p)| **p).map(|(r, _)| r).sum();
    Some((positive_ranks - positives * (positives + 1.0) / 2.0) / (positives * negatives))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
    }

    /// `scipy.stats.fisher_exact(table, alternative='two-sided').pvalue` (scipy 1.17).
    #[test]
    fn fisher_matches_scipy() {
        for (table, scipy) in [
            ([[8, 2], [1, 5]], 0.034965034965034975),
            ([[3, 17], [40, 140]], 0.5755870895953576),
            ([[0, 10], [12, 3]], 0.00010768609503297887),
            ([[25, 5], [91, 79]], 0.002323577163046672),
        ] {
            assert!(close(fisher_exact(table), scipy), "{table:?}: {} against {scipy}", fisher_exact(table));
        }
        assert_eq!(fisher_exact([[0, 0], [0, 0]]), 1.0);
    }

    /// A table far in the tail, as 100,000 sessions give: the p-value underflows to zero,
    /// positive zero, and reads as such.
    #[test]
    fn a_p_value_beyond_the_floats_is_zero_and_says_so() {
        let p = fisher_exact([[15_000, 0], [15_000, 30_000]]);
        assert!(p == 0.0 && p.is_sign_positive(), "{p:?}");
        assert_eq!(probability_text(p, 4), "<1e-300");
        assert_eq!(probability_text(0.0123456, 4), "0.0123");
        assert_eq!(probability_text(0.0000123, 3), "1.2e-5");
    }

    /// `scipy.stats.binomtest(k, n).proportion_ci(0.95, method='wilson')`.
    #[test]
    fn wilson_matches_scipy() {
        for (k, n, low, high) in [
            (7, 10, 0.39677814746114526, 0.892208732593699),
            (0, 12, 0.0, 0.24249400665524085),
            (48, 116, 0.32833485328047207, 0.5047779926677415),
            (20, 20, 0.8388748419471808, 1.0),
        ] {
            let (l, h) = wilson_interval(k, n, 0.95);
            assert!((l - low).abs() < 1e-9 && (h - high).abs() < 1e-9, "{k}/{n}: ({l}, {h}) against ({low}, {high})");
        }
    }

    /// `sklearn.metrics.cohen_kappa_score` (scikit-learn 1.7) of the same verdicts.
    #[test]
    fn kappa_matches_scikit_learn() {
        // [1,1,1,0,0,0,1,0,1,1] against [1,0,1,0,0,1,1,0,1,1].
        assert!(close(cohen_kappa(5, 1, 1, 3).unwrap(), 0.5833333333333333));
        // 30 yes and 20 no against 25 + 10 yes.
        assert!(close(cohen_kappa(25, 5, 10, 10).unwrap(), 0.34782608695652173));
        assert_eq!(cohen_kappa(4, 0, 0, 0), None);
    }

    /// `sklearn.metrics.roc_auc_score` of the same labels and scores.
    #[test]
    fn auc_matches_scikit_learn() {
        let auc = roc_auc(&[0.9, 0.1, 0.4, 0.4, 0.8, 0.3], &[true, false, true, false, true, false]).unwrap();
        assert!(close(auc, 0.9444444444444444), "{auc}");
        let tied = roc_auc(&[0.5, 0.5, 0.5, 0.2, 0.7, 0.9, 0.1], &[true, true, false, false, true, false, false]).unwrap();
        assert!(close(tied, 0.6666666666666666), "{tied}");
        assert_eq!(roc_auc(&[0.1, 0.2], &[true, true]), None);
    }

    /// `scipy.stats.false_discovery_control(p, method='bh')`.
    #[test]
    fn benjamini_hochberg_matches_scipy() {
        let q = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.5, 0.001]);
        for (got, scipy) in q.iter().zip([0.025, 0.05, 0.05, 0.5, 0.005]) {
            assert!(close(*got, scipy), "{q:?}");
        }
    }
}

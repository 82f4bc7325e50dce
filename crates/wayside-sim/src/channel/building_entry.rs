//! ITU-R P.2109's building entry loss, and Sommer et al.'s building
//! losses carried by it from 5.9 GHz to the scenario's carrier: brick
//! walls attenuate a little more at 5 GHz than at 2.4 GHz, 8.2 dB per
//! wall at 2.412 GHz and 8.9 dB at 5.2 GHz. The obstacle stage
//! ([`super::obstacles`]) takes them as its default losses.

use super::obstacles::{PER_METRE, PER_WALL, SOMMER_FREQUENCY};
use crate::units::{Db, Hertz};

/// ITU-R P.2109-1 (2019), Annex 1 §3: the median (50% of locations)
/// building entry loss in dB of a traditional building, for a horizontal
/// path, at `f`: 10·log10(10^(A/10) + 10^(B/10) + 10^(C/10)) with
/// A = r + s·log f + t·(log f)², B = w + x·log f, C = −3 (f in GHz), and
/// the Recommendation's coefficients for traditional buildings r = 12.64,
/// s = 3.72, t = 0.96, w = 9.1, x = −3.0.
pub fn p2109_median_loss(f: Hertz) -> Db {
    let lf = (f.0 / 1e9).log10();
    let a = 12.64 + 3.72 * lf + 0.96 * lf * lf;
    let b = 9.1 - 3.0 * lf;
    let c = -3.0;
    Db(10.0 * (10f64.powf(a / 10.0) + 10f64.powf(b / 10.0) + 10f64.powf(c / 10.0)).log10())
}

/// Sommer et al.'s per-wall and per-metre losses carried from 5.9 GHz to
/// `f` by P.2109's frequency dependence ([`p2109_median_loss`]).
pub fn sommer_at(f: Hertz) -> (Db, Db) {
    let r = p2109_median_loss(f).0 / p2109_median_loss(SOMMER_FREQUENCY).0;
    (Db(PER_WALL.0 * r), Db(PER_METRE.0 * r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Db, b: f64) -> bool {
        (a.0 - b).abs() < 1e-9
    }

    #[test]
    fn p2109_median_loss_against_hand_computed_values() {
        // At 2.412 GHz: log f = 0.38238, A = 12.64 + 1.42246 + 0.14037 =
        // 14.20283, B = 9.1 - 1.14715 = 7.95285; 10^1.420283 + 10^0.795285
        // + 10^-0.3 = 26.3195 + 6.2407 + 0.5012 = 33.0614, 15.1933 dB.
        assert!((p2109_median_loss(Hertz(2.412e9)).0 - 15.1933).abs() < 1e-3);
        // At 5.9 GHz: log f = 0.77085, A = 16.07801, B = 6.78744:
        // 40.5323 + 4.7725 + 0.5012 = 45.8060, 16.6092 dB.
        assert!((p2109_median_loss(Hertz(5.9e9)).0 - 16.6092).abs() < 1e-3);
        // The loss rises with frequency over the WiFi bands.
        assert!(p2109_median_loss(Hertz(5.2e9)).0 > p2109_median_loss(Hertz(2.412e9)).0);
    }

    #[test]
    fn sommer_losses_are_theirs_at_5_9_ghz_and_scaled_elsewhere() {
        let (w, m) = sommer_at(SOMMER_FREQUENCY);
        assert!(close(w, 9.0) && close(m, 0.4), "{w:?} {m:?}");
        // 2.412 GHz: 15.1933 / 16.6092 = 0.91475 of 9 dB and 0.4 dB/m.
        let (w, m) = sommer_at(Hertz(2.412e9));
        assert!(
            (w.0 - 8.2328).abs() < 1e-3 && (m.0 - 0.36590).abs() < 1e-4,
            "{w:?} {m:?}"
        );
        // 5.2 GHz (802.11a channel 40): 0.98613.
        let (w, m) = sommer_at(Hertz(5.2e9));
        assert!(
            (w.0 - 8.8751).abs() < 1e-3 && (m.0 - 0.39445).abs() < 1e-4,
            "{w:?} {m:?}"
        );
    }
}

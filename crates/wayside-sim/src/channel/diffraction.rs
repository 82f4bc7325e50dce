//! Diffraction at building edges: the single knife edge of ITU-R P.526
//! (§4.1, eq. 31), applied in the horizontal plane at the vertical edges
//! (the outline's corners) of the buildings of the obstacle stage.
//!
//! A corner at signed clearance `h` from the line of sight, `d1` and `d2`
//! from its ends along it, has the Fresnel–Kirchhoff parameter
//! v = h·√(2/λ·(1/d1 + 1/d2)) (P.526 eq. 26), positive when the corner
//! stands in the way; the loss is
//! J(v) = 6.9 + 20·log10(√((v − 0.1)² + 1) + v − 0.1) dB for v > −0.78
//! and 0 below (eq. 31): 6 dB at grazing
//! incidence, rising as the line of sight sinks behind the edge, and a
//! little loss already while the edge is inside the first Fresnel zone on
//! the clear side. Of a building, the corner that matters is the principal
//! edge (the largest v on the side the signal goes round, P.526 §4.5.1's
//! Deygout step); of the two sides, the one that costs less. A clear line
//! past a building then sees J of its nearest corner (v < 0), and a
//! blocked one the easier way round, whose power adds to what goes through
//! the walls ([`power_sum`]). Losses of several buildings add in dB, as
//! the wall losses do (each treated as alone; no multiple-edge terms).

use crate::geometry::Vec2;

/// P.526 eq. (31): below this v the knife edge costs nothing.
pub const V_MIN: f64 = -0.78;

/// J(v) in dB (P.526 eq. 31); 0 for v ≤ −0.78.
pub fn knife_edge_loss(v: f64) -> f64 {
    if v <= V_MIN {
        return 0.0;
    }
    let w = v - 0.1;
    6.9 + 20.0 * ((w * w + 1.0).sqrt() + w).log10()
}

/// v for a clearance `h` (positive: the edge stands in the way) at `d1`
/// and `d2` from the ends (P.526 eq. 26).
pub fn fresnel_v(h: f64, d1: f64, d2: f64, wavelength: f64) -> f64 {
    h * (2.0 / wavelength * (1.0 / d1 + 1.0 / d2)).sqrt()
}

/// How far from a line `d` long a corner can stand and still cost
/// anything: the clearance where v = −0.78 at the line's middle (the
/// widest point of the first Fresnel zone).
pub fn reach(d: f64, wavelength: f64) -> f64 {
    -V_MIN * (wavelength * d / 8.0).sqrt()
}

/// The v of the principal edge of the corners `outline` on the line from
/// `a` to `b`: per side the largest, of the two sides the smaller (the way
/// round that costs less). Corners whose foot on the line falls within a
/// metre of an end, or beyond it, are left out (an edge at an antenna is
/// not a knife edge between the two). `None` if no corner counts.
pub fn principal_edge_v(outline: &[Vec2], a: Vec2, b: Vec2, wavelength: f64) -> Option<f64> {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let d = dx.hypot(dy);
    if d <= 2.0 {
        return None;
    }
    let (mut left, mut right) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for p in outline {
        let (px, py) = (p.x - a.x, p.y - a.y);
        let along = (px * dx + py * dy) / d;
        if along < 1.0 || along > d - 1.0 {
            continue;
        }
        let side = (dx * py - dy * px) / d; // > 0 on the left of a → b
        let k = fresnel_v(1.0, along, d - along, wavelength);
        left = left.max(side * k);
        right = right.max(-side * k);
    }
    let v = left.min(right);
    (v > f64::NEG_INFINITY).then_some(v)
}

/// The loss of two paths whose powers add (through the walls, and round
/// an edge), in dB.
pub fn power_sum(a: f64, b: f64) -> f64 {
    -10.0 * (10f64.powf(-a / 10.0) + 10f64.powf(-b / 10.0)).log10()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn j_follows_p526_figure_and_formula() {
        // Hand-computed from eq. (31).
        assert_eq!(knife_edge_loss(-0.78), 0.0);
        assert_eq!(knife_edge_loss(-2.0), 0.0);
        assert!(close(knife_edge_loss(0.0), 6.03, 0.01)); // grazing: ~6 dB
        assert!(close(knife_edge_loss(1.0), 13.93, 0.01));
        assert!(close(knife_edge_loss(2.4), 20.54, 0.01));
        // Just above −0.78 the loss is small and positive, and J rises with v.
        assert!(knife_edge_loss(-0.7) > 0.0 && knife_edge_loss(-0.7) < 1.0);
        let vs: Vec<f64> = (0..50).map(|i| -0.7 + 0.1 * i as f64).collect();
        assert!(vs
            .windows(2)
            .all(|w| knife_edge_loss(w[1]) > knife_edge_loss(w[0])));
    }

    #[test]
    fn v_scales_as_the_first_fresnel_zone() {
        // h equal to the first Fresnel radius √(λ d1 d2 / d) gives v = √2.
        let (d1, d2, l): (f64, f64, f64) = (30.0, 70.0, 0.125);
        let r1 = (l * d1 * d2 / (d1 + d2)).sqrt();
        assert!(close(fresnel_v(r1, d1, d2, l), 2f64.sqrt(), 1e-12));
        assert!(close(
            reach(100.0, l),
            0.78 * (0.125f64 * 100.0 / 8.0).sqrt(),
            1e-12
        ));
    }

    fn square() -> Vec<Vec2> {
        // 10 m square, [40, 50] x [2, 12]
        vec![
            Vec2::new(40.0, 2.0),
            Vec2::new(50.0, 2.0),
            Vec2::new(50.0, 12.0),
            Vec2::new(40.0, 12.0),
        ]
    }

    #[test]
    fn a_building_beside_a_clear_line_is_its_nearest_corner() {
        // Line along y = 0 from 0 to 100: the corners at y = 2 are 2 m clear.
        let l = 0.125;
        let v = principal_edge_v(&square(), Vec2::new(0.0, 0.0), Vec2::new(100.0, 0.0), l).unwrap();
        let nearest = fresnel_v(-2.0, 40.0, 60.0, l).max(fresnel_v(-2.0, 50.0, 50.0, l));
        assert!(close(v, nearest, 1e-12) && v < 0.0);
        // Raised to touch the wall: grazing, v = 0.
        let v = principal_edge_v(&square(), Vec2::new(0.0, 2.0), Vec2::new(100.0, 2.0), l).unwrap();
        assert!(close(v, 0.0, 1e-12));
    }

    #[test]
    fn a_blocked_line_goes_round_the_side_that_costs_less() {
        // Line along y = 4 cuts the square: 2 m of building below it, 8 m
        // above; the way round below costs less.
        let l = 0.125;
        let v = principal_edge_v(&square(), Vec2::new(0.0, 4.0), Vec2::new(100.0, 4.0), l).unwrap();
        let below = fresnel_v(2.0, 40.0, 60.0, l).max(fresnel_v(2.0, 50.0, 50.0, l));
        assert!(close(v, below, 1e-12) && v > 0.0);
        // Corners beyond an end do not count.
        assert_eq!(
            principal_edge_v(&square(), Vec2::new(0.0, 4.0), Vec2::new(30.0, 4.0), l),
            None
        );
    }

    #[test]
    fn powers_add() {
        assert!(close(
            power_sum(10.0, 10.0),
            10.0 - 10.0 * 2f64.log10(),
            1e-12
        ));
        assert!(close(power_sum(0.0, 200.0), 0.0, 1e-12));
        assert!(power_sum(6.0, 30.0) < 6.0);
    }
}

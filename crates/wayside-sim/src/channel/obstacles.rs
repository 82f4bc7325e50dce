//! The obstacle stage: buildings as 2-D polygons that attenuate the line
//! of sight between two antennas by a loss per wall crossed and per metre
//! inside — the empirical model of Sommer et al., "A Computationally
//! Inexpensive Empirical Model of IEEE 802.11p Radio Shadowing in Urban
//! Environments" (WONS 2011), which Veins ships as
//! `SimpleObstacleShadowing`. Their fit to 5.9 GHz measurements around
//! brick buildings gave β = 9 dB per wall and γ = 0.4 dB per metre; those
//! are the defaults here, and each polygon may set its own.
//!
//! Those defaults were fitted at 5.9 GHz; [`super::building_entry`]
//! carries them to another carrier frequency by ITU-R P.2109 (a scenario
//! asks for it with `environment.building_loss = "sommer-p2109"`).
//!
//! With diffraction on ([`Obstacles::with_diffraction`]), each building
//! near the line also costs the knife-edge loss of its principal corner
//! ([`super::diffraction`]): a clear line that passes within the first
//! Fresnel zone of a corner loses up to 6 dB, and a blocked one gets the
//! power that goes round the building on top of what goes through it, so
//! the loss grows over a few metres as the line of sight sinks behind an
//! edge instead of jumping by two walls at once.
//!
//! In the chain it follows the path loss, before shadowing and fading.
//! Lookups go through a uniform grid over the polygons' bounding boxes,
//! walked cell by cell along the line of sight, so a link costs only the
//! polygons near its line, whatever their number.

use super::diffraction::{knife_edge_loss, power_sum, principal_edge_v, reach};
use super::stage::{Endpoint, Stage};
use crate::geometry::Vec2;
use crate::units::{Db, Hertz};
use quick_xml::events::Event;
use quick_xml::Reader;

/// Sommer et al. (2011): loss per wall of a brick building (β).
pub const PER_WALL: Db = Db(9.0);
/// Sommer et al. (2011): loss per metre inside a brick building (γ).
pub const PER_METRE: Db = Db(0.4);
/// The carrier frequency Sommer et al. fitted [`PER_WALL`] and
/// [`PER_METRE`] at (IEEE 802.11p, 5.9 GHz).
pub const SOMMER_FREQUENCY: Hertz = Hertz(5.9e9);

/// Side of the grid cells the polygons are indexed in.
const CELL: f64 = 50.0;

/// One building: its outline (a simple polygon, closed implicitly) and its
/// losses.
#[derive(Clone, Debug, PartialEq)]
pub struct Obstacle {
    pub outline: Vec<Vec2>,
    pub per_wall: Db,
    pub per_metre: Db,
}

impl Obstacle {
    fn edges(&self) -> impl Iterator<Item = (Vec2, Vec2)> + '_ {
        let n = self.outline.len();
        (0..n).map(move |i| (self.outline[i], self.outline[(i + 1) % n]))
    }

    /// Whether `p` is inside (even–odd rule).
    fn contains(&self, p: Vec2) -> bool {
        let mut inside = false;
        for (a, b) in self.edges() {
            if (a.y > p.y) != (b.y > p.y) && p.x < a.x + (p.y - a.y) * (b.x - a.x) / (b.y - a.y) {
                inside = !inside;
            }
        }
        inside
    }

    /// Whether `p` lies on a wall (within a micrometre).
    fn on_wall(&self, p: Vec2) -> bool {
        self.edges().any(|(a, b)| {
            let (ex, ey) = (b.x - a.x, b.y - a.y);
            let len2 = ex * ex + ey * ey;
            let t = (((p.x - a.x) * ex + (p.y - a.y) * ey) / len2).clamp(0.0, 1.0);
            (a.x + t * ex - p.x).hypot(a.y + t * ey - p.y) < 1e-6
        })
    }

    /// The loss on the segment `a`–`b`: walls crossed, and the length
    /// inside. The segment is cut where it meets a wall (corners included)
    /// and each piece is inside or not by its midpoint; a piece running
    /// along a wall is outside, so grazing a wall or touching a corner
    /// crosses nothing, and a wall counts once per change between inside
    /// and outside.
    fn attenuation(&self, a: Vec2, b: Vec2) -> f64 {
        let (dx, dy) = (b.x - a.x, b.y - a.y);
        let mut ts: Vec<f64> = Vec::new();
        for (p, q) in self.edges() {
            let (ex, ey) = (q.x - p.x, q.y - p.y);
            let denom = dx * ey - dy * ex;
            if denom == 0.0 {
                continue; // parallel: the neighbouring walls bound any overlap
            }
            let t = ((p.x - a.x) * ey - (p.y - a.y) * ex) / denom;
            let u = ((p.x - a.x) * dy - (p.y - a.y) * dx) / denom;
            if (0.0..=1.0).contains(&t) && (0.0..=1.0).contains(&u) {
                ts.push(t);
            }
        }
        let length = dx.hypot(dy);
        if ts.is_empty() {
            return if self.contains(a) {
                length * self.per_metre.0
            } else {
                0.0
            };
        }
        ts.extend([0.0, 1.0]);
        ts.sort_by(f64::total_cmp);
        let (mut walls, mut metres, mut was_inside) = (0u32, 0.0, None);
        for w in ts.windows(2) {
            if (w[1] - w[0]) * length < 1e-9 {
                continue;
            }
            let t = 0.5 * (w[0] + w[1]);
            let mid = Vec2::new(a.x + t * dx, a.y + t * dy);
            let inside = !self.on_wall(mid) && self.contains(mid);
            if inside {
                metres += (w[1] - w[0]) * length;
            }
            if was_inside.is_some_and(|was| was != inside) {
                walls += 1;
            }
            was_inside = Some(inside);
        }
        walls as f64 * self.per_wall.0 + metres * self.per_metre.0
    }
}

/// The outlines of the `<poly>` elements of a SUMO polygon file (what
/// `polyconvert` writes from OpenStreetMap; coordinates in the network's
/// metres, as its FCD output), keeping those whose `type` is in `types`
/// (all if empty). `name` labels error messages.
pub fn read_sumo_polygons(
    text: &str,
    name: &str,
    types: &[String],
) -> Result<Vec<Vec<Vec2>>, String> {
    let mut reader = Reader::from_str(text);
    let mut out = Vec::new();
    let mut seen_root = false;
    loop {
        let at = reader.buffer_position();
        match reader
            .read_event()
            .map_err(|e| format!("{name}, byte {at}: not well-formed XML ({e})"))?
        {
            Event::Start(e) | Event::Empty(e) => match e.name().as_ref() {
                b"additional" | b"shapes" => seen_root = true,
                b"poly" => {
                    let (mut shape, mut kind) = (None, String::new());
                    for a in e.attributes() {
                        let a =
                            a.map_err(|err| format!("{name}, byte {at}: bad attribute ({err})"))?;
                        let v = a.unescape_value().map_err(|err| {
                            format!("{name}, byte {at}: bad attribute value ({err})")
                        })?;
                        match a.key.as_ref() {
                            b"shape" => shape = Some(v.into_owned()),
                            b"type" => kind = v.into_owned(),
                            _ => {}
                        }
                    }
                    let shape = shape
                        .ok_or_else(|| format!("{name}, byte {at}: <poly> without a shape"))?;
                    if !types.is_empty() && !types.contains(&kind) {
                        continue;
                    }
                    let mut outline = Vec::new();
                    for pair in shape.split_whitespace() {
                        let xy: Vec<f64> = pair
                            .split(',')
                            .map(|v| v.parse::<f64>())
                            .collect::<Result<_, _>>()
                            .map_err(|_| {
                                format!("{name}, byte {at}: shape point '{pair}' is not x,y")
                            })?;
                        let [x, y] = xy[..] else {
                            return Err(format!(
                                "{name}, byte {at}: shape point '{pair}' is not x,y"
                            ));
                        };
                        outline.push(Vec2::new(x, y));
                    }
                    // SUMO closes a polygon by repeating its first point.
                    if outline.len() > 1 && outline.first() == outline.last() {
                        outline.pop();
                    }
                    out.push(outline);
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    if !seen_root {
        return Err(format!(
            "{name}: no <additional> element: not a SUMO polygon file"
        ));
    }
    Ok(out)
}

/// Every obstacle of a scenario, indexed for line-of-sight queries.
#[derive(Clone, Debug, PartialEq)]
pub struct Obstacles {
    list: Vec<Obstacle>,
    origin: Vec2,
    cols: usize,
    rows: usize,
    /// Per cell (row-major), the obstacles whose bounding box meets it.
    cells: Vec<Vec<u32>>,
    /// Per obstacle, its bounding box: a line whose own box misses it is
    /// not tested further.
    boxes: Vec<((f64, f64), (f64, f64))>,
    /// The carrier's wavelength in metres, if the buildings' edges diffract.
    wavelength: Option<f64>,
}

/// The corners of the box around `points`: (least x, least y), (most x,
/// most y).
fn bounds<'a>(points: impl Iterator<Item = &'a Vec2>) -> ((f64, f64), (f64, f64)) {
    points.fold(
        (
            (f64::INFINITY, f64::INFINITY),
            (f64::NEG_INFINITY, f64::NEG_INFINITY),
        ),
        |((x0, y0), (x1, y1)), p| ((x0.min(p.x), y0.min(p.y)), (x1.max(p.x), y1.max(p.y))),
    )
}

impl Obstacles {
    pub fn new(list: Vec<Obstacle>) -> Obstacles {
        if list.is_empty() {
            return Obstacles {
                list,
                origin: Vec2::new(0.0, 0.0),
                cols: 0,
                rows: 0,
                cells: Vec::new(),
                boxes: Vec::new(),
                wavelength: None,
            };
        }
        let ((x0, y0), (x1, y1)) = bounds(list.iter().flat_map(|o| o.outline.iter()));
        let origin = Vec2::new(x0, y0);
        let cols = ((x1 - x0) / CELL).floor() as usize + 1;
        let rows = ((y1 - y0) / CELL).floor() as usize + 1;
        let mut cells = vec![Vec::new(); cols * rows];
        let boxes: Vec<_> = list.iter().map(|o| bounds(o.outline.iter())).collect();
        for (i, &((bx0, by0), (bx1, by1))) in boxes.iter().enumerate() {
            let c = |v: f64, o: f64| ((v - o) / CELL).floor() as usize;
            for r in c(by0, y0)..=c(by1, y0) {
                for col in c(bx0, x0)..=c(bx1, x0) {
                    cells[r * cols + col].push(i as u32);
                }
            }
        }
        Obstacles {
            list,
            origin,
            cols,
            rows,
            cells,
            boxes,
            wavelength: None,
        }
    }

    /// The same buildings, whose corners diffract at `wavelength` metres.
    pub fn with_diffraction(self, wavelength: f64) -> Obstacles {
        Obstacles {
            wavelength: Some(wavelength),
            ..self
        }
    }

    /// The obstacles in the cells the segment `a`–`b` passes through whose
    /// bounding box meets the segment's: the segment clipped to the grid
    /// (Liang–Barsky), then walked cell by cell (Amanatides & Woo, 1987).
    fn candidates(&self, a: Vec2, b: Vec2) -> Vec<u32> {
        let ((sx0, sy0), (sx1, sy1)) = bounds([a, b].iter());
        let meets = |i: &&u32| {
            let ((bx0, by0), (bx1, by1)) = self.boxes[**i as usize];
            bx0 <= sx1 && sx0 <= bx1 && by0 <= sy1 && sy0 <= by1
        };
        let (x0, y0) = ((a.x - self.origin.x) / CELL, (a.y - self.origin.y) / CELL);
        let (dx, dy) = ((b.x - a.x) / CELL, (b.y - a.y) / CELL);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        for (p, q) in [
            (-dx, x0),
            (dx, self.cols as f64 - x0),
            (-dy, y0),
            (dy, self.rows as f64 - y0),
        ] {
            if p == 0.0 {
                if q < 0.0 {
                    return Vec::new();
                }
            } else if p < 0.0 {
                t0 = t0.max(q / p);
            } else {
                t1 = t1.min(q / p);
            }
        }
        if t0 > t1 {
            return Vec::new();
        }
        let cell_of = |t: f64| {
            let (x, y) = (x0 + dx * t, y0 + dy * t);
            (
                (x.floor() as i64).clamp(0, self.cols as i64 - 1),
                (y.floor() as i64).clamp(0, self.rows as i64 - 1),
            )
        };
        let (mut cx, mut cy) = cell_of(t0);
        let (ex, ey) = cell_of(t1);
        let (sx, sy) = (dx.signum() as i64, dy.signum() as i64);
        let next = |c: i64, s: i64, o: f64, d: f64| {
            if d == 0.0 {
                f64::INFINITY
            } else {
                ((c + (s > 0) as i64) as f64 - o) / d
            }
        };
        let (mut tx, mut ty) = (next(cx, sx, x0, dx), next(cy, sy, y0, dy));
        let (step_x, step_y) = (
            if dx == 0.0 {
                f64::INFINITY
            } else {
                1.0 / dx.abs()
            },
            if dy == 0.0 {
                f64::INFINITY
            } else {
                1.0 / dy.abs()
            },
        );
        let mut out = Vec::new();
        loop {
            out.extend(
                self.cells[cy as usize * self.cols + cx as usize]
                    .iter()
                    .filter(meets),
            );
            if (cx, cy) == (ex, ey) {
                break;
            }
            if tx < ty {
                cx += sx;
                tx += step_x;
            } else {
                cy += sy;
                ty += step_y;
            }
            if cx < 0
                || cy < 0
                || cx >= self.cols as i64
                || cy >= self.rows as i64
                || tx.min(ty) > t1 + 1.0
            {
                break;
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether there are no buildings.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The loss the obstacles put on the line of sight from `a` to `b`.
    pub fn attenuation(&self, a: Vec2, b: Vec2) -> Db {
        if self.list.is_empty() {
            return Db(0.0);
        }
        let Some(wavelength) = self.wavelength else {
            return Db(self
                .candidates(a, b)
                .into_iter()
                .map(|i| self.list[i as usize].attenuation(a, b))
                .sum());
        };
        Db(self
            .near(a, b, reach(a.dist(b).0, wavelength))
            .into_iter()
            .map(|i| {
                let o = &self.list[i as usize];
                let through = o.attenuation(a, b);
                if o.contains(a) || o.contains(b) {
                    return through; // no edge between the two
                }
                let round = principal_edge_v(&o.outline, a, b, wavelength).map(knife_edge_loss);
                match round {
                    None => through,
                    Some(j) if through > 0.0 => power_sum(through, j),
                    Some(j) => j,
                }
            })
            .sum())
    }

    /// The candidates of the line `a`–`b` and of the two lines beside it
    /// `margin` metres away: every building that comes within `margin` of
    /// the line (and some farther).
    fn near(&self, a: Vec2, b: Vec2, margin: f64) -> Vec<u32> {
        let d = a.dist(b).0;
        let mut out = self.candidates(a, b);
        if d > 0.0 {
            let (nx, ny) = (-(b.y - a.y) / d * margin, (b.x - a.x) / d * margin);
            for s in [-1.0, 1.0] {
                let shift = |p: Vec2| Vec2::new(p.x + s * nx, p.y + s * ny);
                out.extend(self.candidates(shift(a), shift(b)));
            }
            out.sort_unstable();
            out.dedup();
        }
        out
    }
}

/// On the line from `tx` to `rx`; a clear line costs nothing.
impl Stage for Obstacles {
    fn loss(&self, tx: &Endpoint, rx: &Endpoint) -> f64 {
        self.attenuation(tx.position, rx.position).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(x0: f64, y0: f64, side: f64) -> Obstacle {
        let outline = vec![
            Vec2::new(x0, y0),
            Vec2::new(x0 + side, y0),
            Vec2::new(x0 + side, y0 + side),
            Vec2::new(x0, y0 + side),
        ];
        Obstacle {
            outline,
            per_wall: PER_WALL,
            per_metre: PER_METRE,
        }
    }

    fn close(a: Db, b: f64) -> bool {
        (a.0 - b).abs() < 1e-9
    }

    #[test]
    fn with_diffraction_the_loss_grows_as_the_line_sinks_behind_a_corner() {
        // AP at the origin, a 20 m building [40, 60] x [5, 25]; a car at
        // x = 100 moving up past y = 10, where the line from the AP grazes
        // the corner (60, 5)... the line reaches it at y = 100·5/60.
        let l = 0.125;
        let plain = Obstacles::new(vec![square(40.0, 5.0, 20.0)]);
        let edges = Obstacles::new(vec![square(40.0, 5.0, 20.0)]).with_diffraction(l);
        let ap = Vec2::new(0.0, 0.0);
        let graze = 100.0 * 5.0 / 60.0;
        let at = |o: &Obstacles, y: f64| o.attenuation(ap, Vec2::new(100.0, y)).0;
        // Far clear: nothing; at grazing incidence the 6 dB of P.526.
        assert_eq!(at(&edges, 0.0), 0.0);
        assert!((at(&edges, graze) - 6.03).abs() < 0.01, "{}", at(&edges, graze));
        // Without diffraction the loss jumps from 0 to two walls at once.
        assert_eq!(at(&plain, graze - 0.01), 0.0);
        assert!(at(&plain, graze + 0.01) >= 18.0);
        // With it, it rises step by step through the penumbra...
        let ys: Vec<f64> = (0..80).map(|i| graze - 2.0 + 0.1 * i as f64).collect();
        let losses: Vec<f64> = ys.iter().map(|&y| at(&edges, y)).collect();
        assert!(losses.windows(2).all(|w| w[1] >= w[0] - 1e-9), "{losses:?}");
        assert!(losses[0] < 1.0 && losses[79] > 15.0);
        // ...and never exceeds what goes through the walls alone.
        for &y in ys.iter().filter(|&&y| at(&plain, y) > 0.0) {
            assert!(at(&edges, y) <= at(&plain, y));
        }
        // Reciprocal.
        let car = Vec2::new(100.0, graze + 1.0);
        assert!((edges.attenuation(ap, car).0 - edges.attenuation(car, ap).0).abs() < 1e-9);
    }

    #[test]
    fn with_diffraction_a_corner_just_off_the_line_in_another_cell_is_found() {
        // The building sits in the grid's cells above y = 50, the line runs
        // at y = 49.8: its own cells miss the building, whose corner is
        // 0.2 m away, well inside the first Fresnel zone.
        let l = 0.125;
        let o = Obstacles::new(vec![square(100.0, 50.0, 30.0), square(0.0, -60.0, 5.0)]).with_diffraction(l);
        let loss = o.attenuation(Vec2::new(0.0, 49.8), Vec2::new(250.0, 49.8)).0;
        assert!(loss > 4.0 && loss < 6.03, "{loss}");
    }

    #[test]
    fn a_line_through_a_building_crosses_two_walls_and_its_width() {
        let o = Obstacles::new(vec![square(10.0, -5.0, 20.0)]);
        let a = o.attenuation(Vec2::new(0.0, 0.0), Vec2::new(50.0, 0.0));
        assert!(close(a, 2.0 * 9.0 + 20.0 * 0.4), "{a:?}");
        // Reciprocal.
        assert!(close(
            o.attenuation(Vec2::new(50.0, 0.0), Vec2::new(0.0, 0.0)),
            a.0
        ));
    }

    #[test]
    fn a_clear_line_costs_nothing() {
        let o = Obstacles::new(vec![square(10.0, 10.0, 20.0)]);
        assert!(close(
            o.attenuation(Vec2::new(0.0, 0.0), Vec2::new(50.0, 0.0)),
            0.0
        ));
        assert!(close(
            Obstacles::new(vec![]).attenuation(Vec2::new(0.0, 0.0), Vec2::new(1.0, 1.0)),
            0.0
        ));
    }

    #[test]
    fn an_end_inside_crosses_one_wall() {
        let o = Obstacles::new(vec![square(0.0, -10.0, 20.0)]);
        let a = o.attenuation(Vec2::new(5.0, 0.0), Vec2::new(100.0, 0.0));
        assert!(close(a, 9.0 + 15.0 * 0.4), "{a:?}");
        let both = o.attenuation(Vec2::new(5.0, 0.0), Vec2::new(15.0, 0.0));
        assert!(
            close(both, 10.0 * 0.4),
            "both ends inside: no wall, {both:?}"
        );
    }

    #[test]
    fn a_line_grazing_a_wall_or_a_corner_costs_nothing() {
        // square(10, -5, 20): walls at x = 10, x = 30, y = -5, y = 15.
        let o = Obstacles::new(vec![square(10.0, -5.0, 20.0)]);
        for (a, b) in [
            ((0.0, -5.0), (50.0, -5.0)),   // along the south wall
            ((0.0, 15.0), (50.0, 15.0)),   // along the north wall
            ((10.0, -20.0), (10.0, 30.0)), // along the west wall
            ((0.0, 5.0), (20.0, -15.0)),   // touching the south-west corner
            ((20.0, -15.0), (40.0, 5.0)),  // touching the south-east corner
        ] {
            let (a, b) = (Vec2::new(a.0, a.1), Vec2::new(b.0, b.1));
            assert!(
                close(o.attenuation(a, b), 0.0),
                "{a:?}-{b:?}: {:?}",
                o.attenuation(a, b)
            );
            assert!(
                close(o.attenuation(b, a), 0.0),
                "{b:?}-{a:?}: {:?}",
                o.attenuation(b, a)
            );
        }
    }

    #[test]
    fn a_line_through_two_corners_crosses_two_walls() {
        // y = x - 15 enters at the south-west corner (10, -5) and leaves at
        // the north-east corner (30, 15): 20·√2 m inside.
        let o = Obstacles::new(vec![square(10.0, -5.0, 20.0)]);
        let want = 2.0 * 9.0 + 20.0 * 2f64.sqrt() * 0.4;
        for (a, b) in [
            (Vec2::new(0.0, -15.0), Vec2::new(40.0, 25.0)),
            (Vec2::new(40.0, 25.0), Vec2::new(0.0, -15.0)),
        ] {
            assert!(
                close(o.attenuation(a, b), want),
                "{:?}",
                o.attenuation(a, b)
            );
        }
    }

    #[test]
    fn a_path_inside_costs_its_length_and_a_wall_per_exit() {
        let o = Obstacles::new(vec![square(0.0, 0.0, 40.0)]);
        // Both ends inside, 25 m apart (a 15-20-25 triangle): no wall.
        assert!(close(
            o.attenuation(Vec2::new(5.0, 5.0), Vec2::new(25.0, 20.0)),
            25.0 * 0.4
        ));
        // From inside out through the east wall: 30 m inside, one wall.
        assert!(close(
            o.attenuation(Vec2::new(10.0, 20.0), Vec2::new(60.0, 20.0)),
            9.0 + 30.0 * 0.4
        ));
    }

    #[test]
    fn a_concave_building_is_crossed_twice() {
        // A U open to the top: a line across the arms crosses four walls.
        let pts = [
            (0.0, 0.0),
            (30.0, 0.0),
            (30.0, 30.0),
            (20.0, 30.0),
            (20.0, 10.0),
            (10.0, 10.0),
            (10.0, 30.0),
            (0.0, 30.0),
        ];
        let u = Obstacle {
            outline: pts.iter().map(|&(x, y)| Vec2::new(x, y)).collect(),
            per_wall: Db(1.0),
            per_metre: Db(0.1),
        };
        let o = Obstacles::new(vec![u]);
        let a = o.attenuation(Vec2::new(-5.0, 20.0), Vec2::new(35.0, 20.0));
        assert!(close(a, 4.0 * 1.0 + 20.0 * 0.1), "{a:?}");
    }

    #[test]
    fn far_apart_buildings_are_found_along_a_long_line() {
        let list: Vec<Obstacle> = (0..40)
            .map(|i| square(100.0 * i as f64 + 40.0, -5.0, 10.0))
            .collect();
        let o = Obstacles::new(list);
        let a = o.attenuation(Vec2::new(0.0, 0.0), Vec2::new(4000.0, 0.0));
        assert!(close(a, 40.0 * (2.0 * 9.0 + 10.0 * 0.4)), "{a:?}");
        // A diagonal that touches none of them.
        assert!(close(
            o.attenuation(Vec2::new(0.0, 10.0), Vec2::new(4000.0, 30.0)),
            0.0
        ));
    }

    #[test]
    fn sumo_polygons_are_read_closed_and_filtered_by_type() {
        let xml = r#"<?xml version="1.0"?>
<additional>
  <location netOffset="0,0" convBoundary="0,0,100,100"/>
  <poly id="b1" type="building" color="red" fill="1" layer="-1" shape="10,0 30,0 30,20 10,20 10,0"/>
  <poly id="p1" type="park" shape="50,50 60,50 60,60"/>
</additional>"#;
        let all = read_sumo_polygons(xml, "t.poly.xml", &[]).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(
            all[0],
            vec![
                Vec2::new(10.0, 0.0),
                Vec2::new(30.0, 0.0),
                Vec2::new(30.0, 20.0),
                Vec2::new(10.0, 20.0)
            ]
        );
        let buildings = read_sumo_polygons(xml, "t.poly.xml", &["building".to_string()]).unwrap();
        assert_eq!(buildings.len(), 1);
        let e = read_sumo_polygons(
            "<additional><poly id=\"x\" shape=\"1,2 3\"/></additional>",
            "t",
            &[],
        )
        .unwrap_err();
        assert!(e.contains("'3' is not x,y"), "{e}");
        let e = read_sumo_polygons("<net/>", "t", &[]).unwrap_err();
        assert!(e.contains("not a SUMO polygon file"), "{e}");
    }

    #[test]
    fn the_index_agrees_with_testing_every_building() {
        // Pseudo-random buildings and lines: the grid must never miss one.
        let mut s = crate::rng::Stream::new("test", 1, 0, "obstacles");
        let list: Vec<Obstacle> = (0..200)
            .map(|_| {
                square(
                    s.uniform() * 2000.0,
                    s.uniform() * 2000.0,
                    5.0 + s.uniform() * 40.0,
                )
            })
            .collect();
        let o = Obstacles::new(list.clone());
        for _ in 0..3000 {
            let a = Vec2::new(s.uniform() * 2400.0 - 200.0, s.uniform() * 2400.0 - 200.0);
            let b = Vec2::new(s.uniform() * 2400.0 - 200.0, s.uniform() * 2400.0 - 200.0);
            let brute: f64 = list.iter().map(|x| x.attenuation(a, b)).sum();
            assert!((o.attenuation(a, b).0 - brute).abs() < 1e-9, "{a:?} {b:?}");
        }
    }
}

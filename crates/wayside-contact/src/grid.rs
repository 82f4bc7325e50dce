//! Who is within range of whom at one instant: a uniform spatial grid.
//!
//! Points go into square cells one range wide, sorted by cell, so a
//! neighbour query looks at 3 × 3 cells (three contiguous runs of the sorted
//! array, found by binary search) instead of every point: building is
//! O(n log n) and memory O(n), whatever the area. No hash map: the order of
//! answers depends only on the input.

/// Points of one instant, bucketed by cell.
#[derive(Clone, Debug, Default)]
pub struct Grid {
    cell: f64,
    /// (cell key, point index), sorted.
    entries: Vec<(u64, u32)>,
    points: Vec<(f32, f32)>,
}

fn cell_of(cell: f64, x: f32, y: f32) -> (i32, i32) {
    (
        (x as f64 / cell).floor() as i32,
        (y as f64 / cell).floor() as i32,
    )
}

fn key(cx: i32, cy: i32) -> u64 {
    // Offset to unsigned so that keys sort by cx, then cy.
    (((cx as i64 - i32::MIN as i64) as u64) << 32) | (cy as i64 - i32::MIN as i64) as u64
}

fn within(a: (f32, f32), b: (f32, f32), range: f64) -> bool {
    let (dx, dy) = (a.0 as f64 - b.0 as f64, a.1 as f64 - b.1 as f64);
    dx * dx + dy * dy <= range * range
}

impl Grid {
    /// An empty grid whose cells are `range` metres wide (`range` > 0).
    pub fn new(range: f64) -> Self {
        assert!(range > 0.0, "grid cell must be positive");
        Grid {
            cell: range,
            entries: Vec::new(),
            points: Vec::new(),
        }
    }

    /// Replaces the points (reusing the buffers); point `i` is the i-th item.
    pub fn rebuild(&mut self, points: impl Iterator<Item = (f32, f32)>) {
        self.points.clear();
        self.points.extend(points);
        self.entries.clear();
        let cell = self.cell;
        self.entries
            .extend(self.points.iter().enumerate().map(|(i, &(x, y))| {
                let (cx, cy) = cell_of(cell, x, y);
                (key(cx, cy), i as u32)
            }));
        self.entries.sort_unstable();
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Calls `f(j)` for every point `j` within `range` (≤ the cell width)
    /// of `p`, in cell order, until `f` returns true; returns whether it did.
    pub fn find_within(&self, p: (f32, f32), range: f64, mut f: impl FnMut(u32) -> bool) -> bool {
        debug_assert!(range <= self.cell);
        let (cx, cy) = cell_of(self.cell, p.0, p.1);
        for dx in -1..=1 {
            let lo = key(cx.saturating_add(dx), cy.saturating_sub(1));
            let hi = key(cx.saturating_add(dx), cy.saturating_add(1));
            let start = self.entries.partition_point(|e| e.0 < lo);
            for &(k, j) in &self.entries[start..] {
                if k > hi {
                    break;
                }
                if within(p, self.points[j as usize], range) && f(j) {
                    return true;
                }
            }
        }
        false
    }

    /// Every pair (i, j), i < j, of points within `range`, sorted.
    pub fn pairs(&self, range: f64) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for (i, &p) in self.points.iter().enumerate() {
            let i = i as u32;
            self.find_within(p, range, |j| {
                if j > i {
                    out.push((i, j));
                }
                false
            });
        }
        out.sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The O(n²) reference: every pair compared.
    fn brute_force(points: &[(f32, f32)], range: f64) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for i in 0..points.len() {
            for j in i + 1..points.len() {
                if within(points[i], points[j], range) {
                    out.push((i as u32, j as u32));
                }
            }
        }
        out
    }

    #[test]
    fn neighbours_across_cell_borders_and_negative_coordinates() {
        let mut g = Grid::new(150.0);
        g.rebuild(
            [
                (-1.0, -1.0),
                (1.0, 1.0),
                (149.0, 0.0),
                (-150.0, 0.0),
                (400.0, 0.0),
            ]
            .into_iter(),
        );
        // (0, 2) and (1, 3) are 150.003 m and 151.003 m apart: out of range.
        assert_eq!(g.pairs(150.0), vec![(0, 1), (0, 3), (1, 2)]);
    }

    proptest! {
        // Small traces: up to 60 vehicles in a 1 km square (dense enough for
        // many contacts at 150 m, and clusters on cell borders).
        #[test]
        fn grid_agrees_with_brute_force(
            points in prop::collection::vec((-500.0f32..500.0, -500.0f32..500.0), 0..60),
            snap in any::<bool>(),
            range in 10.0f64..200.0,
        ) {
            // Half the cases put points exactly on cell borders.
            let points: Vec<(f32, f32)> = if snap {
                points.iter().map(|&(x, y)| (((x / range as f32).round() * range as f32), y)).collect()
            } else { points };
            let mut g = Grid::new(range);
            g.rebuild(points.iter().copied());
            prop_assert_eq!(g.pairs(range), brute_force(&points, range));
        }
    }
}

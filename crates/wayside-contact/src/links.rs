//! The links among hosts from one trace step to the next: every pair within
//! range, and each host's links in the order they came up.
//!
//! The order is The ONE's: `NetworkInterface.connect` appends a new
//! connection to the host's list (`connections.add(con)`,
//! core/NetworkInterface.java line 319) and a broken one is removed from
//! it, so the list runs from the longest-standing link to the newest; the
//! routers walk it in that order (`ActiveRouter.tryMessagesToConnections`,
//! routing/ActiveRouter.java lines 429–440). Links that come up at the same
//! step go in order of the pair (lower host first); The ONE's order there
//! follows its hosts' shuffled update order.

use crate::grid::Grid;

/// The links of the present step.
#[derive(Debug)]
pub struct Links {
    range: f64,
    grid: Grid,
    /// Linked pairs (lower host, higher host), sorted.
    pairs: Vec<(u32, u32)>,
    /// Per host, its peers in the order the links came up.
    of: Vec<Vec<u32>>,
    /// The pairs that came up at the last update, sorted.
    up: Vec<(u32, u32)>,
}

impl Links {
    /// No links yet among `hosts` hosts (numbered 0 to `hosts` - 1).
    pub fn new(hosts: usize, range: f64) -> Self {
        Links {
            range,
            grid: Grid::new(range),
            pairs: Vec::new(),
            of: vec![Vec::new(); hosts],
            up: Vec::new(),
        }
    }

    /// Moves to a step at which the hosts `ids` (distinct, each below
    /// `hosts`) are at `points`: links between hosts within range come up,
    /// the others go down.
    pub fn update(&mut self, ids: &[u32], points: &[(f32, f32)]) {
        debug_assert_eq!(ids.len(), points.len());
        self.grid.rebuild(points.iter().copied());
        let mut now: Vec<(u32, u32)> = self
            .grid
            .pairs(self.range)
            .into_iter()
            .map(|(i, j)| {
                let (a, b) = (ids[i as usize], ids[j as usize]);
                (a.min(b), a.max(b))
            })
            .collect();
        now.sort_unstable();
        self.up.clear();
        let old = std::mem::take(&mut self.pairs);
        let (mut i, mut j) = (0, 0);
        while i < old.len() || j < now.len() {
            match (old.get(i), now.get(j)) {
                (Some(&o), Some(&n)) if o == n => {
                    i += 1;
                    j += 1;
                }
                (Some(&o), n) if n.is_none_or(|&n| o < n) => {
                    for (a, b) in [(o.0, o.1), (o.1, o.0)] {
                        self.of[a as usize].retain(|&p| p != b);
                    }
                    i += 1;
                }
                (_, Some(&n)) => {
                    self.of[n.0 as usize].push(n.1);
                    self.of[n.1 as usize].push(n.0);
                    self.up.push(n);
                    j += 1;
                }
                _ => unreachable!("one side has an element"),
            }
        }
        self.pairs = now;
    }

    /// The peers of `h`, longest-standing link first.
    pub fn of(&self, h: u32) -> &[u32] {
        &self.of[h as usize]
    }

    /// Whether `a` and `b` are linked at this step.
    pub fn linked(&self, a: u32, b: u32) -> bool {
        self.pairs.binary_search(&(a.min(b), a.max(b))).is_ok()
    }

    /// The links that came up at the last update, as (lower, higher) host.
    pub fn came_up(&self) -> &[(u32, u32)] {
        &self.up
    }

    /// Approximate heap size, bytes.
    pub fn heap_bytes(&self) -> usize {
        (self.pairs.capacity() + self.up.capacity()) * 8
            + self.of.iter().map(|l| l.capacity() * 4 + 24).sum::<usize>()
            + self.grid.len() * 20
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_host_lists_its_links_oldest_first() {
        let mut l = Links::new(4, 100.0);
        // 0 and 1 meet first; 2 comes near 0 a step later; then 1 leaves.
        l.update(&[0, 1, 2], &[(0.0, 0.0), (50.0, 0.0), (500.0, 0.0)]);
        assert_eq!(l.came_up(), &[(0, 1)]);
        l.update(&[2, 0, 1], &[(-60.0, 0.0), (0.0, 0.0), (50.0, 0.0)]);
        assert_eq!(l.of(0), &[1, 2]);
        assert_eq!(l.came_up(), &[(0, 2)]);
        assert!(!l.linked(1, 2), "110 m apart");
        l.update(&[0, 2], &[(0.0, 0.0), (-60.0, 0.0)]);
        assert_eq!(l.of(0), &[2]);
        assert!(l.of(1).is_empty() && !l.linked(0, 1) && l.linked(2, 0));
        // 1 returns: its link is now the newest of 0's.
        l.update(&[0, 1, 2], &[(0.0, 0.0), (50.0, 0.0), (-60.0, 0.0)]);
        assert_eq!(l.of(0), &[2, 1]);
    }
}

//! Geometry in the road plane: points and vectors in metres. Beside the
//! units as a floor every layer may stand on; where a node is at a given
//! time is mobility's concern ([`crate::mobility`]).

use crate::units::Meters;

/// A point or vector in the road plane, metres.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Vec2 {
    pub x: f64,
    pub y: f64,
}

impl Vec2 {
    pub const fn new(x: f64, y: f64) -> Self {
        Vec2 { x, y }
    }
    pub fn dist(self, o: Vec2) -> Meters {
        Meters(((self.x - o.x).powi(2) + (self.y - o.y).powi(2)).sqrt())
    }
    pub fn norm(self) -> f64 {
        (self.x * self.x + self.y * self.y).sqrt()
    }
    /// The point a fraction `f` of the way from `self` to `o`.
    pub fn lerp(self, o: Vec2, f: f64) -> Vec2 {
        Vec2::new(self.x + (o.x - self.x) * f, self.y + (o.y - self.y) * f)
    }
}

//! The built-in scenarios (the files in `scenarios/`), compiled in and
//! looked up by name.

/// The built-in scenarios, by name.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "saturation",
        include_str!("../../../../scenarios/saturation.toml"),
    ),
    ("range", include_str!("../../../../scenarios/range.toml")),
    (
        "drive-by",
        include_str!("../../../../scenarios/drive-by.toml"),
    ),
    (
        "static-lab",
        include_str!("../../../../scenarios/static-lab.toml"),
    ),
    (
        "hadaller-highway",
        include_str!("../../../../scenarios/hadaller-highway.toml"),
    ),
    (
        "hadaller-highway-remote",
        include_str!("../../../../scenarios/hadaller-highway-remote.toml"),
    ),
    (
        "hadaller-two-cars",
        include_str!("../../../../scenarios/hadaller-two-cars.toml"),
    ),
    (
        "drivethru-autobahn",
        include_str!("../../../../scenarios/drivethru-autobahn.toml"),
    ),
    (
        "drivethru-lab",
        include_str!("../../../../scenarios/drivethru-lab.toml"),
    ),
    (
        "chen-vanet",
        include_str!("../../../../scenarios/chen-vanet.toml"),
    ),
    (
        "mukherjee-static",
        include_str!("../../../../scenarios/mukherjee-static.toml"),
    ),
    (
        "mukherjee-slow-drive",
        include_str!("../../../../scenarios/mukherjee-slow-drive.toml"),
    ),
    (
        "mukherjee-pedestrian",
        include_str!("../../../../scenarios/mukherjee-pedestrian.toml"),
    ),
    (
        "zahn-terraced",
        include_str!("../../../../scenarios/zahn-terraced.toml"),
    ),
    (
        "zahn-residential",
        include_str!("../../../../scenarios/zahn-residential.toml"),
    ),
    (
        "zahn-motorway",
        include_str!("../../../../scenarios/zahn-motorway.toml"),
    ),
    (
        "feup-2019",
        include_str!("../../../../scenarios/feup-2019.toml"),
    ),
];

/// The text of the built-in scenario `name`, if there is one.
pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

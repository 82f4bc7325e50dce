//! `--set key=value` overrides, applied to the scenario's TOML tree before
//! it is parsed: dotted keys, array entries by index (`node.1.x`, also
//! written `node[1].x` as error messages name keys) or by node name
//! (`node.car.x`). An override changes or adds a value; it cannot add an
//! entry to an array section, and says so naming the section.

use super::ScenarioError;

/// The sections that are arrays of tables (`[[node]]`, …): an override can
/// change their entries but not create them.
const ARRAY_SECTIONS: [&str; 5] = ["node", "traffic", "link", "app", "obstacle"];

/// Applies `key=value` overrides to a parsed TOML document. Keys are dotted
/// paths; inside the array sections a segment is an index or, for entries
/// with a `name`, that name: `node.car.tx_power="15 dBm"`,
/// `traffic.0.payload="500 B"` (also written `traffic[0].payload`). A value
/// that is not TOML is taken as a string.
pub fn apply_overrides(doc: &mut toml::Table, overrides: &[String]) -> Result<(), ScenarioError> {
    for o in overrides {
        let fail = |e: String| ScenarioError(format!("override '{o}': {e}"));
        let Some((key, raw)) = o.split_once('=') else {
            return Err(ScenarioError(format!(
                "override '{o}': expected KEY=VALUE, for example radio.standard=802.11b"
            )));
        };
        // `node[1].x`, as errors name keys, is `node.1.x`.
        let key = key.trim().replace('[', ".").replace(']', "");
        let segments: Vec<&str> = key.split('.').collect();
        if segments.iter().any(|s| s.is_empty()) {
            return Err(fail(format!("empty segment in key '{key}'")));
        }
        let (first, rest) = (segments[0], &segments[1..]);
        if !rest.is_empty() && ARRAY_SECTIONS.contains(&first) && !doc.contains_key(first) {
            return Err(fail(format!(
                "the scenario has no [[{first}]] entries; an override changes a value, it cannot add an entry: add a [[{first}]] to the scenario file"
            )));
        }
        set_path(doc, first, rest, parse_override_value(raw.trim())).map_err(fail)?;
    }
    Ok(())
}

fn parse_override_value(raw: &str) -> toml::Value {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.to_string())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

/// Sets `first.rest…` in `table` to `value`.
fn set_path(
    table: &mut toml::Table,
    first: &str,
    rest: &[&str],
    value: toml::Value,
) -> Result<(), String> {
    let Some((next, rest)) = rest.split_first() else {
        table.insert(first.to_string(), value);
        return Ok(());
    };
    let entry = table
        .entry(first.to_string())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    match entry {
        toml::Value::Table(t) => set_path(t, next, rest, value),
        toml::Value::Array(items) => {
            let sel = *next;
            let idx = select(first, items, sel)?;
            let Some((key, rest)) = rest.split_first() else {
                return Err(format!(
                    "'{first}.{sel}' is a whole table; name one of its keys"
                ));
            };
            match &mut items[idx] {
                toml::Value::Table(t) => set_path(t, key, rest, value),
                _ => Err(format!("'{first}.{sel}' is not a table")),
            }
        }
        _ => Err(format!("'{first}' is a value, not a table")),
    }
}

/// The index of the entry of array `first` that `sel` names, by index or name.
fn select(first: &str, items: &[toml::Value], sel: &str) -> Result<usize, String> {
    match sel.parse::<usize>() {
        Ok(i) if i < items.len() => Ok(i),
        Ok(i) => Err(format!(
            "'{first}' has {} entries; index {i} is out of range",
            items.len()
        )),
        Err(_) => items
            .iter()
            .position(|it| it.get("name").and_then(|n| n.as_str()) == Some(sel))
            .ok_or_else(|| {
                let names: Vec<&str> = items
                    .iter()
                    .filter_map(|it| it.get("name").and_then(|n| n.as_str()))
                    .collect();
                if names.is_empty() {
                    format!(
                        "no {first} named '{sel}'; use an index 0 to {}",
                        items.len().saturating_sub(1)
                    )
                } else {
                    format!(
                        "no {first} named '{sel}'; {first}s: {}, or an index 0 to {}",
                        names.join(", "),
                        items.len() - 1
                    )
                }
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "duration = \"1 s\"\n[radio]\nstandard = \"802.11g\"\n\
                       [[node]]\nname = \"ap\"\n[[node]]\nname = \"car\"\n";

    fn applied(o: &[&str]) -> Result<toml::Table, String> {
        let mut doc: toml::Table = DOC.parse().unwrap();
        let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
        apply_overrides(&mut doc, &o).map(|()| doc).map_err(|e| e.0)
    }

    fn node(doc: &toml::Table, i: usize) -> &toml::Table {
        doc["node"].as_array().unwrap()[i].as_table().unwrap()
    }

    #[test]
    fn entries_are_named_by_index_bracket_or_name() {
        let doc = applied(&["node.0.x=1", "node[1].y=2", "node.car.z=\"3 m\""]).unwrap();
        assert_eq!(node(&doc, 0)["x"].as_integer(), Some(1));
        assert_eq!(node(&doc, 1)["y"].as_integer(), Some(2));
        assert_eq!(node(&doc, 1)["z"].as_str(), Some("3 m"));
    }

    #[test]
    fn values_are_toml_or_else_strings_and_tables_are_created() {
        let doc = applied(&[
            "radio.standard=802.11b",
            "mac.rate_control={algorithm=\"onoe\"}",
            "environment.seed=4",
        ])
        .unwrap();
        assert_eq!(doc["radio"]["standard"].as_str(), Some("802.11b"));
        assert_eq!(
            doc["mac"]["rate_control"]["algorithm"].as_str(),
            Some("onoe")
        );
        assert_eq!(doc["environment"]["seed"].as_integer(), Some(4));
    }

    #[test]
    fn a_section_the_scenario_lacks_is_named() {
        for section in ARRAY_SECTIONS.iter().filter(|s| **s != "node") {
            let e = applied(&[&format!("{section}.0.payload=\"1 B\"")]).unwrap_err();
            assert!(
                e.contains(&format!("no [[{section}]] entries")) && e.contains("cannot add"),
                "{e}"
            );
            assert!(!e.contains("invalid type"), "{e}");
        }
    }

    #[test]
    fn bad_keys_say_what_is_wrong() {
        let e = applied(&["node.bus.x=1"]).unwrap_err();
        assert!(
            e.contains("no node named 'bus'") && e.contains("ap, car") && e.contains("0 to 1"),
            "{e}"
        );
        assert!(applied(&["node[7].x=1"])
            .unwrap_err()
            .contains("index 7 is out of range"));
        assert!(applied(&["node.1=1"]).unwrap_err().contains("whole table"));
        assert!(applied(&["duration.x=1"])
            .unwrap_err()
            .contains("'duration' is a value, not a table"));
        assert!(applied(&["radio..standard=1"])
            .unwrap_err()
            .contains("empty segment"));
        assert!(applied(&["radio.standard"])
            .unwrap_err()
            .contains("KEY=VALUE"));
    }
}

//! Deep merge of values maps: addon-operator's `utils.MergeValues` /
//! `mergeMap` (pkg/utils/mergemap.go).
//!
//! A key whose value is a map on both sides is merged recursively; anything
//! else (lists, scalars, null, a map over a scalar) replaces what was there.
//! Go panics ("too deep!") past 32 levels of nested maps; that is returned as
//! an error here instead.

use super::convert::Values;
use serde_json::Value;

/// `mergemap.go` `maxDepth`.
const MAX_DEPTH: usize = 32;

/// More than 32 levels of maps on both sides of a merge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("too deep!")]
pub struct TooDeep;

/// `utils.MergeValues(dst, src)`: `src` merged over `dst`.
pub fn merge_into(dst: &mut Values, src: &Values) -> Result<(), TooDeep> {
    merge(dst, src, 0)
}

/// `utils.MergeValues(layers...)`: a new map with every layer merged in order.
pub fn merge_values<'a>(layers: impl IntoIterator<Item = &'a Values>) -> Result<Values, TooDeep> {
    let mut res = Values::new();
    for layer in layers {
        merge(&mut res, layer, 0)?;
    }
    Ok(res)
}

fn merge(dst: &mut Values, src: &Values, depth: usize) -> Result<(), TooDeep> {
    if depth > MAX_DEPTH {
        return Err(TooDeep);
    }
    for (key, src_val) in src {
        if let (Some(Value::Object(dst_map)), Value::Object(src_map)) = (dst.get_mut(key), src_val)
        {
            merge(dst_map, src_map, depth + 1)?;
            continue;
        }
        dst.insert(key.clone(), src_val.clone());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Values {
        match v {
            Value::Object(m) => m,
            _ => Values::new(),
        }
    }

    #[test]
    fn maps_merge_lists_and_scalars_replace() {
        let mut a = obj(json!({"m": {"x": 1, "l": [1, 2]}, "s": "a", "n": {"k": 1}}));
        let b = obj(json!({"m": {"y": 2, "l": [3]}, "s": null, "n": 5}));
        merge_into(&mut a, &b).ok();
        assert_eq!(
            Value::Object(a),
            json!({"m": {"x": 1, "y": 2, "l": [3]}, "s": null, "n": 5})
        );
    }
}

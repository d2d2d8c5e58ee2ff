//! Reading `.cm` params: the declared [`ParamInfo`]s, the [`ParamReader`] that checks params
//! against them, and the [`ParamType`]s a `#[param]` field can have.

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::{Value as Json, json};

use super::ParamError;
use crate::operator::Params;

/// A declared parameter of an operator type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// Name in `.cm` `params:`.
    pub name: &'static str,
    /// Type as shown to users (`usize`, `string`, `test`, `json`…).
    pub ty: &'static str,
    /// Default as JSON text, or `None` when the parameter is required.
    pub default: Option<&'static str>,
    /// One line of documentation.
    pub doc: &'static str,
}

/// Reads `.cm` params against declared [`ParamInfo`]s: rejects unknown names, reads each value
/// with serde, and falls back to declared defaults.
#[derive(Debug)]
pub struct ParamReader<'a> {
    params: &'a Params,
    declared: &'static [ParamInfo],
}

impl<'a> ParamReader<'a> {
    /// Checks that every given param is declared.
    pub fn new(params: &'a Params, declared: &'static [ParamInfo]) -> Result<Self, ParamError> {
        for k in params.keys() {
            if !declared.iter().any(|d| d.name == k) {
                let names: Vec<&str> = declared.iter().map(|d| d.name).collect();
                let hint = crate::util::did_you_mean(k, names.iter().copied())
                    .map(|s| format!("did you mean `{s}`?"))
                    .unwrap_or_else(|| {
                        if names.is_empty() {
                            "this operator takes no params".to_owned()
                        } else {
                            format!("its params are: {}", names.join(", "))
                        }
                    });
                return Err(
                    ParamError::new(k.clone(), format!("unknown param `{k}`")).with_hint(hint)
                );
            }
        }
        Ok(ParamReader { params, declared })
    }

    /// The JSON value of param `name`: as given, or its declared default. A required param
    /// that is absent is an error.
    pub fn value(&self, name: &str) -> Result<Json, ParamError> {
        let info = self.declared.iter().find(|d| d.name == name);
        let ty = info.map_or("value", |i| i.ty);
        match (self.params.get(name), info.and_then(|i| i.default)) {
            (Some(v), _) => Ok(v.clone()),
            (None, Some(default)) => serde_json::from_str(default).map_err(|e| {
                ParamError::new(name.to_owned(), format!("bad default for `{name}`: {e}"))
            }),
            (None, None) => Err(ParamError::new(
                name.to_owned(),
                format!("missing param `{name}` ({ty})"),
            )
            .with_hint(format!("add `{name}:` under `params:`"))),
        }
    }

    /// Reads param `name` as a `T`, or its declared default.
    pub fn get<T: DeserializeOwned>(&self, name: &str) -> Result<T, ParamError> {
        let value = self.value(name)?;
        serde_json::from_value(value.clone()).map_err(|e| self.ill_typed(name, &value, e))
    }

    /// Reads param `name` as a [`ParamType`], or its declared default: what `#[operator]`'s
    /// factory does for each `#[param]` field.
    pub fn read<T: ParamType>(&self, name: &str) -> Result<T, ParamError> {
        let value = self.value(name)?;
        T::from_param(&value).map_err(|e| self.ill_typed(name, &value, e))
    }

    fn ill_typed(&self, name: &str, value: &Json, detail: impl fmt::Display) -> ParamError {
        let ty = self
            .declared
            .iter()
            .find(|d| d.name == name)
            .map_or("value", |i| i.ty);
        ParamError::new(
            name.to_owned(),
            format!("param `{name}` expects {ty}, got `{value}`"),
        )
        .with_hint(detail.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Param types

/// A type a `#[param]` field can have: read from the JSON value of a `.cm` param, written back
/// by [`Operator::params`](crate::Operator::params), and named in the catalogue.
///
/// Implemented for the integers, `f32`, `f64`, `bool`, `String`, `serde_json::Value` (any YAML
/// value), [`Test`](crate::ops::Test), and `Vec` and `Option` of each of them. Implement it for
/// a type of your own to use it as a param.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be read from `.cm` params",
    label = "this `#[param]` type has no `.cm` reading",
    note = "param types are the integers, `f32`, `f64`, `bool`, `String`, `serde_json::Value`, `Test`, and `Vec`/`Option` of them; implement `cameleon::catalogue::ParamType` for a type of your own"
)]
pub trait ParamType: Sized {
    /// The type's name in the catalogue and in error messages (`usize`, `string`, `json`…).
    const NAME: &'static str;
    /// The default of a param of this type declared without one, as JSON text: `None` makes the
    /// param required (an `Option` is `null` when absent).
    const IMPLICIT_DEFAULT: Option<&'static str> = None;
    /// Reads a value; the error says what is wrong with it.
    fn from_param(v: &Json) -> Result<Self, String>;
    /// The value as `.cm` writes it.
    fn to_param(&self) -> Json;
}

macro_rules! serde_param_types {
    ($($ty:ty => $name:literal),* $(,)?) => {$(
        impl ParamType for $ty {
            const NAME: &'static str = $name;
            fn from_param(v: &Json) -> Result<Self, String> {
                <$ty as serde::Deserialize>::deserialize(v).map_err(|e| e.to_string())
            }
            fn to_param(&self) -> Json {
                json!(self)
            }
        }
        impl ParamType for Vec<$ty> {
            const NAME: &'static str = concat!("list of ", $name);
            fn from_param(v: &Json) -> Result<Self, String> {
                list_param(v)
            }
            fn to_param(&self) -> Json {
                Json::Array(self.iter().map(ParamType::to_param).collect())
            }
        }
        impl ParamType for Option<$ty> {
            const NAME: &'static str = concat!($name, " or null");
            const IMPLICIT_DEFAULT: Option<&'static str> = Some("null");
            fn from_param(v: &Json) -> Result<Self, String> {
                option_param(v)
            }
            fn to_param(&self) -> Json {
                self.as_ref().map_or(Json::Null, ParamType::to_param)
            }
        }
    )*};
}

serde_param_types!(
    u8 => "u8", u16 => "u16", u32 => "u32", u64 => "u64", usize => "usize",
    i8 => "i8", i16 => "i16", i32 => "i32", i64 => "i64", isize => "isize",
    f32 => "f32", f64 => "f64", bool => "bool", String => "string", Json => "json",
);

pub(crate) fn list_param<T: ParamType>(v: &Json) -> Result<Vec<T>, String> {
    match v {
        Json::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| T::from_param(x).map_err(|e| format!("item {i}: {e}")))
            .collect(),
        other => Err(format!("expected a list, got `{other}`")),
    }
}

pub(crate) fn option_param<T: ParamType>(v: &Json) -> Result<Option<T>, String> {
    match v {
        Json::Null => Ok(None),
        other => T::from_param(other).map(Some),
    }
}

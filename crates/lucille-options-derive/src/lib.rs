//! `#[derive(Options)]`: a component's options declared once, as a Rust struct, from which come
//! its key list (the `Spec` that validation and `lucille doc` read: names, kinds, required,
//! defaults, ranges, descriptions from the doc comments) and its typed values
//! (`Options::from_config`: every problem at once, with key paths). The traits it implements
//! live in `lucille_core::config::options`.
//!
//! ```ignore
//! /// Copies each source field's values to one or more destination fields.
//! #[derive(Options)]
//! #[options(base = Spec::stage())]
//! struct CopyFieldsOptions {
//!     /// Source field to destination field(s).
//!     field_mapping: Option<Map<String, Value>>,
//!     /// How a destination that already has values is written.
//!     #[option(default = "overwrite", one_of = ["overwrite", "append", "skip"])]
//!     update_mode: String,
//!     /// Source and destination are nested paths (`a.b[0]`).
//!     #[option(default)]
//!     is_nested: bool,
//! }
//! ```
//!
//! Container attributes (`#[options(..)]`): `base = EXPR` (the `Spec` to extend, default
//! `Spec::new()`), `extend = PATH` (a `fn(Spec) -> Spec` for what attributes do not say:
//! unsupported Lucille keys, free-form blocks). Field attributes (`#[option(..)]`): `key =
//! "name"` (default: the field's name in camelCase), `default` / `default = EXPR`, `one_of =
//! ["a", "b"]` (case-insensitive; the value is kept in the listed spelling), `min = N`, `max =
//! N`, `alias = "older"` (an older Lucille name), `kind = EXPR` (a `Kind` other than the type's),
//! `flatten` (the field is itself an options type for keys several components share: its keys
//! join this spec and it reads them from the same block). Generic structs work (the bounds say
//! what the fields need, e.g. `T: OptionValue + Bounded`). A field of type `Option<T>` is optional; any other type is required unless it has a default.
//! Every field needs a doc comment: it is the key's description in `lucille doc`.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{
    parse_macro_input, Data, DeriveInput, Expr, Fields, GenericArgument, LitStr, PathArguments,
    Type,
};

#[proc_macro_derive(Options, attributes(options, option))]
pub fn derive_options(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

struct FieldOptions {
    key: Option<LitStr>,
    default: Option<Option<Expr>>,
    one_of: Option<Vec<LitStr>>,
    min: Option<Expr>,
    max: Option<Expr>,
    alias: Option<LitStr>,
    kind: Option<Expr>,
    flatten: bool,
}

fn doc_of(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
            {
                lines.push(s.value().trim().to_string());
            }
        }
    }
    lines.join(" ").trim().to_string()
}

/// `field_mapping` → `fieldMapping`, Lucille's spelling of keys.
fn camel_case(ident: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in ident.trim_start_matches("r#").chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `Option<T>` → `Some(T)`.
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

/// How `lucille doc` shows the default of a field with a bare `default` (its type's).
fn default_text_of(ty: &Type) -> String {
    let name = match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        _ => String::new(),
    };
    match name.as_str() {
        "bool" => "false".into(),
        "UpdateMode" => "overwrite".into(),
        "Vec" | "Strings" => "none".into(),
        "Map" => "{}".into(),
        "String" => "\"\"".into(),
        "i64" | "usize" | "u64" | "f64" => "0".into(),
        _ => "the type's default".into(),
    }
}

fn parse_field(attrs: &[syn::Attribute]) -> syn::Result<FieldOptions> {
    let mut o = FieldOptions {
        key: None,
        default: None,
        one_of: None,
        min: None,
        max: None,
        alias: None,
        kind: None,
        flatten: false,
    };
    for attr in attrs.iter().filter(|a| a.path().is_ident("option")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("key") {
                o.key = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("default") {
                o.default = Some(if meta.input.peek(syn::Token![=]) {
                    Some(meta.value()?.parse()?)
                } else {
                    None
                });
            } else if meta.path.is_ident("one_of") {
                let list: syn::ExprArray = meta.value()?.parse()?;
                let mut items = Vec::new();
                for e in list.elems {
                    match e {
                        Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(s),
                            ..
                        }) => items.push(s),
                        other => {
                            return Err(syn::Error::new(
                                other.span(),
                                "one_of takes string literals",
                            ))
                        }
                    }
                }
                o.one_of = Some(items);
            } else if meta.path.is_ident("min") {
                o.min = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("max") {
                o.max = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("alias") {
                o.alias = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("kind") {
                o.kind = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("flatten") {
                o.flatten = true;
            } else {
                return Err(meta.error(
                    "unknown option attribute (key, default, one_of, min, max, alias, kind, flatten)",
                ));
            }
            Ok(())
        })?;
    }
    Ok(o)
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new(
            input.span(),
            "Options is derived for structs",
        ));
    };
    let Fields::Named(fields) = &data.fields else {
        return Err(syn::Error::new(input.span(), "Options needs named fields"));
    };
    let c = quote!(::lucille_core::config);
    let mut base: Tokens = quote!(#c::Spec::new());
    let mut extend: Option<syn::Path> = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("options")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("base") {
                let e: Expr = meta.value()?.parse()?;
                base = e.to_token_stream();
            } else if meta.path.is_ident("extend") {
                extend = Some(meta.value()?.parse()?);
            } else {
                return Err(meta.error("unknown options attribute (base, extend)"));
            }
            Ok(())
        })?;
    }
    let summary = doc_of(&input.attrs);
    let mut properties = Vec::new();
    let mut reads = Vec::new();
    let mut finals = Vec::new();
    let mut idents = Vec::new();
    for field in &fields.named {
        let Some(ident) = &field.ident else { continue };
        let o = parse_field(&field.attrs)?;
        let doc = doc_of(&field.attrs);
        if doc.is_empty() {
            return Err(syn::Error::new(
                field.span(),
                "every option needs a doc comment: it is the key's description in `lucille doc`",
            ));
        }
        if o.flatten {
            // A group of keys declared by another options type (shared by several components):
            // its keys join this spec, and it reads them from the same block.
            let ty = &field.ty;
            properties.push(quote!(spec = spec.with(<#ty as #c::Options>::spec());));
            reads.push(quote! {
                let #ident: Option<#ty> = <#ty as #c::Options>::read(config, errors);
            });
            finals.push(quote!(let #ident = #ident?;));
            idents.push(ident.clone());
            continue;
        }
        let key = o
            .key
            .as_ref()
            .map(LitStr::value)
            .unwrap_or_else(|| camel_case(&ident.to_string()));
        let optional = option_inner(&field.ty);
        if optional.is_some() && o.default.is_some() {
            return Err(syn::Error::new(
                field.span(),
                "an Option field has no default (absent is None): drop `default` or the Option",
            ));
        }
        let inner = optional.unwrap_or(&field.ty);
        let required = optional.is_none() && o.default.is_none();
        let kind = match (&o.kind, &o.one_of) {
            (Some(k), _) => k.to_token_stream(),
            (None, Some(items)) => quote!(#c::Kind::OneOf(&[#(#items),*])),
            (None, None) => quote!(<#inner as #c::OptionValue>::kind()),
        };
        let default_text = match &o.default {
            Some(Some(e)) => e.to_token_stream().to_string(),
            Some(None) => default_text_of(inner),
            None => String::new(),
        };
        let range = match (&o.min, &o.max) {
            (Some(a), Some(b)) => quote!(Some((Some(#a as f64), Some(#b as f64)))),
            (Some(a), None) => quote!(Some((Some(#a as f64), None))),
            (None, Some(b)) => quote!(Some((None, Some(#b as f64)))),
            (None, None) => quote!(None),
        };
        let alias = match &o.alias {
            Some(a) => quote!(Some(#a)),
            None => quote!(None),
        };
        properties.push(quote! {
            spec = spec.property(#c::Property {
                name: #key,
                kind: #kind,
                required: #required,
                description: #doc,
                default: #default_text,
                range: #range,
            });
        });
        if let Some(a) = &o.alias {
            properties.push(quote!(spec = spec.alias(#a, #key);));
        }
        let mut checks = Vec::new();
        if let Some(items) = &o.one_of {
            checks.push(quote! {
                if let Some(v) = #ident.as_mut() {
                    #c::options::one_of(config, #key, v, &[#(#items),*], errors);
                }
            });
        }
        if o.min.is_some() || o.max.is_some() {
            checks.push(quote! {
                if let Some(v) = #ident.as_ref() {
                    #c::options::in_range(config, #key, v, #range, errors);
                }
            });
        }
        reads.push(quote! {
            let mut #ident: Option<#inner> = #c::options::read(config, #key, #alias, errors);
            #(#checks)*
        });
        finals.push(if optional.is_some() {
            quote!(let #ident = #ident;)
        } else if let Some(default) = &o.default {
            let value = match default {
                // An integer literal takes the field's type (`default = 3` on a usize).
                Some(
                    e @ Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(_),
                        ..
                    }),
                ) => quote!((#e as #inner)),
                Some(e) => quote!(::core::convert::Into::into(#e)),
                None => quote!(::core::default::Default::default()),
            };
            quote!(let #ident = match #ident { Some(v) => v, None => #value };)
        } else {
            quote! {
                let Some(#ident) = #ident else {
                    errors.push(config.error(#key, "missing required key"));
                    return None;
                };
            }
        });
        idents.push(ident.clone());
    }
    let extend = match extend {
        Some(p) => quote!(spec = #p(spec);),
        None => quote!(),
    };
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics #c::Options for #name #ty_generics #where_clause {
            fn spec() -> #c::Spec {
                let mut spec: #c::Spec = #base;
                spec = spec.summary(#summary);
                #(#properties)*
                #extend
                spec
            }

            fn read(
                config: &#c::ComponentConfig,
                errors: &mut ::std::vec::Vec<#c::ConfigError>,
            ) -> ::core::option::Option<Self> {
                // Each key read unless the spec's check (or an earlier read) already has a
                // problem with it, so none is reported twice.
                #(#reads)*
                if !errors.is_empty() {
                    return None;
                }
                #(#finals)*
                Some(Self { #(#idents),* })
            }
        }
    })
}

//! `#[derive(Elt)]`: user structs as element types of `accelerate` arrays
//! and scalar expressions. Use it through the library, `accelerate::Elt`
//! (also in `accelerate::prelude`), never from this crate directly.
//!
//! ```
//! use accelerate::prelude::*;
//!
//! #[derive(Clone, Copy, Debug, PartialEq, Elt)]
//! pub struct Particle {
//!     pub pos: (f32, f32),
//!     pub mass: f32,
//!     pub id: u32,
//! }
//!
//! let ps = Vector::from_elems(vec![
//!     Particle { pos: (0.0, 1.0), mass: 2.0, id: 7 },
//!     Particle { pos: (3.0, 4.0), mass: 0.5, id: 8 },
//! ]);
//! // `p.pos()`, `p.mass()`, `p.id()`: the accessors of `ParticleExp`
//! // (in scope here because it is defined next to `Particle`).
//! let moved = use_array(ps).map(|p| {
//!     let (x, y) = p.pos().unlift();
//!     Particle::lift(lift((x + 1.0, y)), p.mass() * 2.0, p.id())
//! });
//! let r = accelerate::run(&moved)?;
//! assert_eq!(r.to_vec()[1], Particle { pos: (4.0, 4.0), mass: 1.0, id: 8 });
//! # Ok::<(), accelerate::Error>(())
//! ```
//!
//! # What the derive generates
//!
//! For `struct S { a: A, b: B }` (visibility `V`):
//!
//! - `impl Elt for S`. To the IR the struct *is* the tuple `(A, B)` of its
//!   fields in declaration order, so nothing new is needed in the IR or in
//!   any backend, and `Array<Sh, S>` is stored as a struct of arrays: one
//!   buffer per primitive leaf of every field (`S::elt_ty().leaves()`),
//!   nested structs and tuples flattened. `into_buffers`/`from_buffers`
//!   move each field into its own column and delegate to the field's type,
//!   so an array of a struct of primitives is built and read back without
//!   any per-element boxing.
//! - `V trait SExp { fn a(&self) -> Exp<A>; fn b(&self) -> Exp<B>; }`,
//!   implemented for `Exp<S>`: one accessor per field, named after it. A
//!   trait, because the user's crate may not add inherent methods to the
//!   foreign `Exp`; it is in scope wherever `S` was defined, and elsewhere
//!   is imported with `S` (`use shapes::{S, SExp};`). Tuple structs get
//!   `_0`, `_1`, ... Field visibility is not consulted: every accessor has
//!   the struct's visibility.
//! - `impl S { V fn lift(a: impl IntoExp<A>, b: impl IntoExp<B>) -> Exp<S> }`:
//!   the constructor, named after the library's `lift` (which builds tuple
//!   expressions). An associated function of the struct itself rather than
//!   a free function, so it is found wherever `S` is: `S::lift(x, 1.0)`.
//!   Each argument is an expression or a plain value (a constant).
//!   A constant struct is `constant(S { .. })`, as for any element type.
//!
//! Every generated item carries the caller's source location
//! (`#[track_caller]`), so errors name the user's line.
//!
//! Generic structs are supported: each type parameter gets an `Elt` bound
//! in the generated impls and in the accessor trait (`PairExp<T>`), and
//! const parameters are passed through. There is no limit on the number of
//! fields (tuples stop at 8).
//!
//! # Options
//!
//! `#[elt(crate = "path")]` names the library when it is not reachable as
//! `::accelerate`: a renamed dependency (`#[elt(crate = "acc")]`), or code
//! inside the `accelerate` crate itself (`#[elt(crate = "crate")]`, e.g.
//! its unit tests; its integration tests and examples are separate crates
//! and need nothing).
//!
//! # Errors
//!
//! Each is a compile error at the offending token:
//!
//! - on an enum: no sum types in the IR (represent the tag as a field, as
//!   `Option<T>` is `(bool, T)`);
//! - on a union: which field is live is unknown, so there is no
//!   struct-of-arrays form;
//! - on a lifetime parameter: element types are `'static`;
//! - on an unknown `#[elt(..)]` option, or any `#[elt]` on a field;
//! - a field whose type is not an element type: the usual "the trait bound
//!   `String: Elt` is not satisfied", pointing at the field's type;
//! - a missing `Clone`, `Debug` or `PartialEq` (supertraits of `Elt`): the
//!   usual unsatisfied bound, pointing at the derive.
//!
//! # Limitations
//!
//! - The generated names can clash with the user's: a trait `SExp` or an
//!   inherent `S::lift` of the user's own is a "duplicate definition" error.
//! - A field named like a method of `Exp` that applies to every element
//!   type (only the hidden `__field`) is shadowed by it; methods that apply
//!   to some element types only (`min`, `eq`, `cast`, ...) do not apply to
//!   `Exp<S>` and do not interfere.
//! - There is no pattern matching on struct expressions: read fields with
//!   the accessors.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    parse_macro_input, parse_quote, Attribute, Data, DeriveInput, Fields, GenericParam, Generics, Ident,
    Index, LitStr, Member, Path, Type, Visibility,
};

/// Derives `accelerate::array::Elt`, the accessor trait `<Struct>Exp` and
/// the constructor `<Struct>::lift` (see the crate docs).
#[proc_macro_derive(Elt, attributes(elt))]
pub fn derive_elt(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let s = StructR::from_input(input)?;
    let elt_impl = s.elt_impl();
    let accessors = s.accessors();
    let constructor = s.constructor();
    Ok(quote! {
        #elt_impl
        #accessors
        #constructor
    })
}

/// A struct as the derive sees it: a tuple of fields, in order.
struct StructR<'a> {
    /// The library's path, `::accelerate` unless `#[elt(crate = "..")]`.
    krate: Path,
    vis: &'a Visibility,
    ident: &'a Ident,
    /// The struct's generics with an `Elt` bound on every type parameter.
    generics: Generics,
    fields: Vec<FieldR>,
}

/// A field: component `index` of the struct's tuple.
struct FieldR {
    index: Index,
    /// How Rust names the field in `self.m` and `Self { m: .. }`.
    member: Member,
    /// Its accessor and constructor parameter: the field's name, or `_0`.
    name: Ident,
    ty: Type,
}

impl<'a> StructR<'a> {
    fn from_input(input: &'a DeriveInput) -> syn::Result<Self> {
        let fields = match &input.data {
            Data::Struct(data) => &data.fields,
            Data::Enum(data) => {
                return Err(syn::Error::new_spanned(
                    data.enum_token,
                    "#[derive(Elt)] supports structs only, not enums: the IR has no sum types \
                     (represent the tag as a field, as `Option<T>` is the tuple `(bool, T)`)",
                ))
            }
            Data::Union(data) => {
                return Err(syn::Error::new_spanned(
                    data.union_token,
                    "#[derive(Elt)] supports structs only, not unions: which field a union holds \
                     is not known, so it has no struct-of-arrays form",
                ))
            }
        };
        let krate = crate_path(&input.attrs)?;
        let generics = with_elt_bounds(&input.generics, &krate)?;
        let fields = fields_of(fields)?;
        Ok(StructR { krate, vis: &input.vis, ident: &input.ident, generics, fields })
    }

    /// `impl Elt for S`: the tuple of the fields' types.
    fn elt_impl(&self) -> TokenStream {
        let StructR { krate, ident, fields, .. } = self;
        let (impl_generics, ty_generics, where_clause) = self.generics.split_for_impl();
        let elt = quote!(#krate::array::Elt);
        let elt_ty = quote!(#krate::array::EltTy);
        let val = quote!(#krate::array::Val);
        let tys: Vec<_> = fields.iter().map(|f| &f.ty).collect();
        let members: Vec<_> = fields.iter().map(|f| &f.member).collect();
        let indices: Vec<_> = fields.iter().map(|f| &f.index).collect();
        // Spanned at the field's type, so that a field whose type is not an
        // element type is reported there.
        let field_tys: Vec<_> = fields
            .iter()
            .map(|f| {
                let ty = &f.ty;
                quote_spanned!(ty.span()=> <#ty as #elt>::elt_ty())
            })
            .collect();
        let not_tuple = format!("a tuple value for struct `{ident}`");
        let from_val = if fields.is_empty() {
            quote! {
                let _ = __v;
                Self {}
            }
        } else {
            quote! {
                let __fields = ::std::option::Option::expect(#val::tuple(__v), #not_tuple);
                Self { #( #members: <#tys as #elt>::from_val(&__fields[#indices]) ),* }
            }
        };
        let buffers = self.buffer_fns();
        quote! {
            #[automatically_derived]
            impl #impl_generics #elt for #ident #ty_generics #where_clause {
                fn elt_ty() -> #elt_ty {
                    #elt_ty::Tuple(::std::vec![ #( #field_tys ),* ])
                }
                fn to_val(&self) -> #val {
                    #val::Tuple(::std::vec![ #( <#tys as #elt>::to_val(&self.#members) ),* ])
                }
                fn from_val(__v: &#val) -> Self {
                    #from_val
                }
                #buffers
            }
        }
    }

    /// `into_buffers`/`from_buffers` column by column: field `i` owns the
    /// buffers of its leaves, after those of fields `0..i`. A struct without
    /// fields keeps the trait's defaults.
    fn buffer_fns(&self) -> TokenStream {
        let StructR { krate, ident, fields, .. } = self;
        if fields.is_empty() {
            return TokenStream::new();
        }
        let elt = quote!(#krate::array::Elt);
        let elt_ty = quote!(#krate::array::EltTy);
        let buffer = quote!(#krate::array::Buffer);
        let tys: Vec<_> = fields.iter().map(|f| &f.ty).collect();
        let members: Vec<_> = fields.iter().map(|f| &f.member).collect();
        let indices: Vec<_> = fields.iter().map(|f| &f.index).collect();
        let columns: Vec<_> = (0..fields.len()).map(|i| format_ident!("__column{i}")).collect();
        let values: Vec<_> = (0..fields.len()).map(|i| format_ident!("__value{i}")).collect();
        let ends: Vec<_> = (0..fields.len()).map(|i| format_ident!("__end{i}")).collect();
        let starts: Vec<TokenStream> =
            std::iter::once(quote!(0)).chain(ends.iter().map(|e| quote!(#e))).take(fields.len()).collect();
        // `__end{i-1} +`, nothing for the first field.
        let offsets: Vec<TokenStream> =
            std::iter::once(quote!()).chain(ends.iter().map(|e| quote!(#e +))).take(fields.len()).collect();
        let n = fields.len();
        let wrong_ty = format!("expected the {n}-tuple type of struct `{ident}`, found {{}}");
        let short = format!("a column of struct `{ident}` with one value per element");
        quote! {
            fn into_buffers(__items: ::std::vec::Vec<Self>) -> ::std::vec::Vec<#buffer> {
                #( let mut #columns = ::std::vec::Vec::<#tys>::with_capacity(__items.len()); )*
                for __item in __items {
                    let Self { #( #members: #values ),* } = __item;
                    #( #columns.push(#values); )*
                }
                let mut __buffers = ::std::vec::Vec::new();
                #( ::std::iter::Extend::extend(&mut __buffers, <#tys as #elt>::into_buffers(#columns)); )*
                __buffers
            }

            fn from_buffers(
                __buffers: &[#buffer],
                __len: usize,
                __ty: &#elt_ty,
            ) -> ::std::vec::Vec<Self> {
                let __tys = match __ty {
                    #elt_ty::Tuple(__tys) if __tys.len() == #n => __tys.as_slice(),
                    __other => ::std::panic!(#wrong_ty, __other),
                };
                #( let #ends = #offsets __tys[#indices].leaves().len(); )*
                #(
                    let mut #columns = ::std::iter::IntoIterator::into_iter(
                        <#tys as #elt>::from_buffers(&__buffers[#starts..#ends], __len, &__tys[#indices]),
                    );
                )*
                let mut __out = ::std::vec::Vec::with_capacity(__len);
                for _ in 0..__len {
                    __out.push(Self {
                        #( #members: ::std::option::Option::expect(
                            ::std::iter::Iterator::next(&mut #columns), #short) ),*
                    });
                }
                __out
            }
        }
    }

    /// The trait `SExp` of field accessors, implemented for `Exp<S>`.
    fn accessors(&self) -> TokenStream {
        let StructR { krate, vis, ident, generics, fields } = self;
        let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
        let trait_ident = format_ident!("{}Exp", ident);
        let exp = quote!(#krate::lang::Exp);
        let names: Vec<_> = fields.iter().map(|f| &f.name).collect();
        let tys: Vec<_> = fields.iter().map(|f| &f.ty).collect();
        let indices: Vec<_> = fields.iter().map(|f| &f.index).collect();
        let trait_doc = format!(
            "Field accessors of `{ident}` expressions (made by `#[derive(Elt)]`): \
             each reads one field of an `Exp<{ident}>`."
        );
        let docs: Vec<_> = fields
            .iter()
            .map(|f| match &f.member {
                Member::Named(m) => format!("The field `{m}` of a `{ident}` expression."),
                Member::Unnamed(i) => format!("Field {} of a `{ident}` expression.", i.index),
            })
            .collect();
        quote! {
            #[doc = #trait_doc]
            #[allow(dead_code, non_camel_case_types, non_snake_case)]
            #vis trait #trait_ident #generics #where_clause {
                #(
                    #[doc = #docs]
                    fn #names(&self) -> #exp<#tys>;
                )*
            }

            #[automatically_derived]
            #[allow(non_snake_case)]
            impl #impl_generics #trait_ident #ty_generics for #exp<#ident #ty_generics> #where_clause {
                #(
                    #[track_caller]
                    fn #names(&self) -> #exp<#tys> {
                        #exp::<#ident #ty_generics>::__field::<#tys>(self, #indices)
                    }
                )*
            }
        }
    }

    /// `S::lift(a, b, ..)`: a struct expression from its fields' expressions.
    fn constructor(&self) -> TokenStream {
        let StructR { krate, vis, ident, generics, fields } = self;
        let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
        let exp = quote!(#krate::lang::Exp);
        let into_exp = quote!(#krate::lang::IntoExp);
        let any_exp = quote!(#krate::lang::exp::AnyExp);
        let names: Vec<_> = fields.iter().map(|f| &f.name).collect();
        let tys: Vec<_> = fields.iter().map(|f| &f.ty).collect();
        let doc = format!(
            "A `{ident}` expression from its fields, in declaration order: each an expression \
             or a plain value (made by `#[derive(Elt)]`)."
        );
        quote! {
            impl #impl_generics #ident #ty_generics #where_clause {
                #[doc = #doc]
                #[track_caller]
                #[allow(dead_code, non_snake_case, clippy::too_many_arguments)]
                #vis fn lift( #( #names: impl #into_exp<#tys> ),* ) -> #exp<Self> {
                    #exp::<Self>::__from_fields(&[
                        #(
                            <#any_exp as ::std::convert::From<#exp<#tys>>>::from(
                                <_ as #into_exp<#tys>>::into_exp(#names),
                            )
                        ),*
                    ])
                }
            }
        }
    }
}

/// The library's path: `::accelerate`, or the last `#[elt(crate = "..")]`.
fn crate_path(attrs: &[Attribute]) -> syn::Result<Path> {
    let mut krate: Path = parse_quote!(::accelerate);
    for attr in attrs.iter().filter(|a| a.path().is_ident("elt")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let path: LitStr = meta.value()?.parse()?;
                krate = path.parse()?;
                Ok(())
            } else {
                Err(meta.error("unknown #[elt] option: the only option is `crate = \"path\"`"))
            }
        })?;
    }
    Ok(krate)
}

/// The struct's generics with `T: Elt` for every type parameter; lifetime
/// parameters are an error (an element type is `'static`).
fn with_elt_bounds(generics: &Generics, krate: &Path) -> syn::Result<Generics> {
    let mut out = generics.clone();
    let mut bounded = Vec::new();
    for param in &generics.params {
        match param {
            GenericParam::Type(t) => bounded.push(&t.ident),
            GenericParam::Const(_) => {}
            GenericParam::Lifetime(l) => {
                return Err(syn::Error::new_spanned(
                    l,
                    "#[derive(Elt)] does not support lifetime parameters: an element type is \
                     `'static` (its values are stored in arrays and copied out of them)",
                ))
            }
        }
    }
    let predicates = &mut out.make_where_clause().predicates;
    for t in bounded {
        predicates.push(parse_quote!(#t: #krate::array::Elt));
    }
    Ok(out)
}

fn fields_of(fields: &Fields) -> syn::Result<Vec<FieldR>> {
    fields
        .iter()
        .enumerate()
        .map(|(i, field)| {
            if let Some(attr) = field.attrs.iter().find(|a| a.path().is_ident("elt")) {
                return Err(syn::Error::new_spanned(attr, "#[elt] takes no options on fields"));
            }
            let index = Index::from(i);
            let (member, name) = match &field.ident {
                Some(ident) => (Member::Named(ident.clone()), ident.clone()),
                None => (Member::Unnamed(index.clone()), format_ident!("_{}", i)),
            };
            Ok(FieldR { index, member, name, ty: field.ty.clone() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! The expansion's errors and the shape of its output; what the output
    //! does is tested through the library, in
    //! `crates/accelerate/tests/derive_elt.rs`.

    use super::*;

    fn expand_str(input: DeriveInput) -> Result<String, String> {
        expand(&input).map(|t| t.to_string()).map_err(|e| e.to_string())
    }

    #[test]
    fn enums_are_rejected_with_a_reason() {
        let err = expand_str(parse_quote!(
            enum Shape {
                Circle(f32),
                Square(f32),
            }
        ))
        .unwrap_err();
        assert!(err.contains("structs only, not enums"), "{err}");
        assert!(err.contains("Option<T>"), "{err}");
    }

    #[test]
    fn unions_are_rejected_with_a_reason() {
        let err = expand_str(parse_quote!(
            union Bits {
                f: f32,
                u: u32,
            }
        ))
        .unwrap_err();
        assert!(err.contains("not unions"), "{err}");
    }

    #[test]
    fn lifetime_parameters_are_rejected() {
        let err = expand_str(parse_quote!(
            struct View<'a> {
                x: &'a f32,
            }
        ))
        .unwrap_err();
        assert!(err.contains("lifetime parameters"), "{err}");
    }

    #[test]
    fn unknown_options_are_rejected() {
        let err = expand_str(parse_quote!(
            #[elt(rename = "x")]
            struct P {
                x: f32,
            }
        ))
        .unwrap_err();
        assert!(err.contains("unknown #[elt] option"), "{err}");
        let err = expand_str(parse_quote!(
            struct P {
                #[elt(crate = "x")]
                x: f32,
            }
        ))
        .unwrap_err();
        assert!(err.contains("no options on fields"), "{err}");
    }

    #[test]
    fn paths_are_absolute_by_default() {
        let out = expand_str(parse_quote!(
            pub struct P {
                x: f32,
            }
        ))
        .unwrap();
        assert!(out.contains("impl :: accelerate :: array :: Elt for P"), "{out}");
        assert!(!out.contains(" crate ::"), "{out}");
    }

    #[test]
    fn crate_option_replaces_the_library_path() {
        let out = expand_str(parse_quote!(
            #[elt(crate = "crate")]
            struct P {
                x: f32,
            }
        ))
        .unwrap();
        assert!(out.contains("impl crate :: array :: Elt for P"), "{out}");
        assert!(!out.contains(":: accelerate"), "{out}");
    }

    #[test]
    fn accessor_trait_takes_the_struct_visibility_and_name() {
        let out = expand_str(parse_quote!(
            pub(crate) struct Particle {
                pos: (f32, f32),
                mass: f32,
            }
        ))
        .unwrap();
        assert!(out.contains("pub (crate) trait ParticleExp"), "{out}");
        assert!(out.contains("fn pos (& self) -> :: accelerate :: lang :: Exp < (f32 , f32) >"), "{out}");
        assert!(out.contains("pub (crate) fn lift (pos : impl"), "{out}");
    }

    #[test]
    fn tuple_struct_fields_are_numbered() {
        let out = expand_str(parse_quote!(
            struct Pair(f32, u8);
        ))
        .unwrap();
        assert!(out.contains("fn _0 (& self)"), "{out}");
        assert!(out.contains("fn _1 (& self)"), "{out}");
        assert!(out.contains("fn lift (_0 : impl"), "{out}");
    }

    #[test]
    fn type_parameters_get_an_elt_bound() {
        let out = expand_str(parse_quote!(
            struct Pair<T, const N: usize> {
                a: T,
                b: T,
            }
        ))
        .unwrap();
        assert!(out.contains("T : :: accelerate :: array :: Elt"), "{out}");
        assert!(out.contains("trait PairExp < T , const N : usize >"), "{out}");
    }
}

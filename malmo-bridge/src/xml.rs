//! A small XML element tree: what Malmo's documents need from XML, and no more.
//!
//! Reading goes through `quick-xml`; the tree keeps, per element, its attributes in
//! document order, all its text concatenated (entities resolved) and its child
//! elements. That is exactly the model of boost's property tree, which MalmoPython
//! uses to re-serialise a mission into its MissionInit, so the same tree can be
//! written back the way the real AgentHost writes it ([`Element::write_boost`]) or
//! compactly ([`Element::write_compact`]).
//!
//! [`Node`] reads typed values out of a tree and names the element path in every
//! [`ReadError`].

use std::fmt::{self, Write as _};
use std::str::FromStr;

use quick_xml::XmlVersion;
use quick_xml::events::Event;

/// Why a document could not be read into a typed value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The text is not well-formed XML.
    #[error("malformed XML at byte {position}: {message}")]
    Syntax {
        /// Byte offset where the parser stopped.
        position: u64,
        /// The parser's message.
        message: String,
    },
    /// There is no root element.
    #[error("no root element")]
    NoRoot,
    /// The root element is not the expected one.
    #[error("root element is <{found}>, expected <{expected}>")]
    WrongRoot {
        /// What the document should be.
        expected: &'static str,
        /// What it is.
        found: String,
    },
    /// A required child element is missing.
    #[error("{path}: missing <{element}>")]
    MissingElement {
        /// The parent's path.
        path: String,
        /// The missing element.
        element: &'static str,
    },
    /// A required attribute is missing.
    #[error("{path}: missing attribute `{attribute}`")]
    MissingAttribute {
        /// The element's path.
        path: String,
        /// The missing attribute.
        attribute: &'static str,
    },
    /// A value does not parse as what it should be.
    #[error("{path}: {value:?} is not {expected}")]
    BadValue {
        /// The element (and attribute, after `@`) holding the value.
        path: String,
        /// The value as written.
        value: String,
        /// What was expected, e.g. "an integer".
        expected: &'static str,
    },
    /// An element's content differs from what the document type fixes.
    #[error("{path}: expected {expected}, found {found}")]
    Mismatch {
        /// Where the documents differ.
        path: String,
        /// What belongs there.
        expected: String,
        /// What is there.
        found: String,
    },
}

/// One XML element: its local name, its attributes in document order (qualified
/// names, `xmlns` declarations included), its text (all text and CDATA pieces
/// between its children, concatenated) and its child elements.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Element {
    pub name: String,
    pub attributes: Vec<(String, String)>,
    pub text: String,
    pub children: Vec<Element>,
}

impl Element {
    /// An element with no content.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            ..Self::default()
        }
    }

    /// Adds an attribute (builder style).
    pub fn attr(mut self, name: &str, value: impl fmt::Display) -> Self {
        self.attributes.push((name.to_owned(), value.to_string()));
        self
    }

    /// Sets the text (builder style).
    pub fn text(mut self, text: impl fmt::Display) -> Self {
        self.text = text.to_string();
        self
    }

    /// Adds a child (builder style).
    pub fn child(mut self, child: Element) -> Self {
        self.children.push(child);
        self
    }

    /// The value of an attribute.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Parses a document into its root element. Leading whitespace is allowed
    /// (MBAG's mission strings start with a newline); comments, processing
    /// instructions and the declaration are skipped.
    pub fn parse_document(text: &str) -> Result<Element, ReadError> {
        let mut reader = quick_xml::Reader::from_str(text.trim_start());
        let mut stack: Vec<Element> = Vec::new();
        let mut root = None;
        loop {
            let syntax =
                |e: &dyn fmt::Display, reader: &quick_xml::Reader<&[u8]>| ReadError::Syntax {
                    position: reader.error_position()
                        + (text.len() - text.trim_start().len()) as u64,
                    message: e.to_string(),
                };
            let event = reader.read_event().map_err(|e| syntax(&e, &reader))?;
            let empty = matches!(event, Event::Empty(_));
            match event {
                Event::Start(start) | Event::Empty(start) => {
                    if root.is_some() {
                        return Err(syntax(&"content after the root element", &reader));
                    }
                    let mut element = Element::new(start.local_name().as_ref());
                    for attribute in start.attributes() {
                        let attribute = attribute.map_err(|e| syntax(&e, &reader))?;
                        let value = attribute
                            .normalized_value(XmlVersion::Implicit1_0)
                            .map_err(|e| syntax(&e, &reader))?;
                        element
                            .attributes
                            .push((attribute.key.as_ref().to_owned(), value.into_owned()));
                    }
                    if empty {
                        Self::close(element, &mut stack, &mut root);
                    } else {
                        stack.push(element);
                    }
                }
                Event::End(_) => {
                    let element = stack.pop().expect("quick-xml checks end tags");
                    Self::close(element, &mut stack, &mut root);
                }
                Event::Text(t) => {
                    Self::append_text(&mut stack, &t.xml_content(XmlVersion::Implicit1_0), &reader)?
                }
                Event::CData(t) => {
                    Self::append_text(&mut stack, &t.xml_content(XmlVersion::Implicit1_0), &reader)?
                }
                Event::GeneralRef(r) => {
                    let resolved = match r.resolve_char_ref().map_err(|e| syntax(&e, &reader))? {
                        Some(c) => c.to_string(),
                        None => match r.xml_content(XmlVersion::Implicit1_0).as_ref() {
                            "lt" => "<".into(),
                            "gt" => ">".into(),
                            "amp" => "&".into(),
                            "quot" => "\"".into(),
                            "apos" => "'".into(),
                            other => {
                                return Err(syntax(
                                    &format_args!("unknown entity &{other};"),
                                    &reader,
                                ));
                            }
                        },
                    };
                    Self::append_text(&mut stack, &resolved, &reader)?;
                }
                Event::Decl(_) | Event::PI(_) | Event::Comment(_) | Event::DocType(_) => {}
                Event::Eof => break,
            }
        }
        if let Some(open) = stack.last() {
            return Err(ReadError::Syntax {
                position: text.len() as u64,
                message: format!("<{}> is never closed", open.name),
            });
        }
        root.ok_or(ReadError::NoRoot)
    }

    fn close(element: Element, stack: &mut [Element], root: &mut Option<Element>) {
        match stack.last_mut() {
            Some(parent) => parent.children.push(element),
            None => *root = Some(element),
        }
    }

    fn append_text(
        stack: &mut [Element],
        text: &str,
        reader: &quick_xml::Reader<&[u8]>,
    ) -> Result<(), ReadError> {
        match stack.last_mut() {
            Some(parent) => parent.text.push_str(text),
            // Whitespace around the root is allowed; anything else is not.
            None if text.trim().is_empty() => {}
            None => {
                return Err(ReadError::Syntax {
                    position: reader.buffer_position(),
                    message: format!("text outside the root element: {text:?}"),
                });
            }
        }
        Ok(())
    }

    /// Writes the element as boost's property-tree XML writer does, before
    /// MalmoPython deletes every `\n` from the result: attributes in order, then
    /// the element's text, then its children; `<x/>` when it has neither.
    pub fn write_boost(&self, out: &mut String) {
        out.push('<');
        out.push_str(&self.name);
        for (name, value) in &self.attributes {
            let _ = write!(out, " {name}=\"{}\"", BoostEscaped(value));
        }
        if self.text.is_empty() && self.children.is_empty() {
            out.push_str("/>");
            return;
        }
        out.push('>');
        let _ = write!(out, "{}", BoostEscaped(&self.text));
        for child in &self.children {
            child.write_boost(out);
        }
        let _ = write!(out, "</{}>", self.name);
    }

    /// Writes the element with no whitespace between elements: text that is only
    /// whitespace is dropped, other text is kept as it is; `<x/>` only for an
    /// element that had no text at all and no children.
    pub fn write_compact(&self, out: &mut String) {
        out.push('<');
        out.push_str(&self.name);
        for (name, value) in &self.attributes {
            let _ = write!(out, " {name}=\"{}\"", Escaped(value));
        }
        // An element that had whitespace text keeps its end tag (`<Inventory>
        // </Inventory>` becomes `<Inventory></Inventory>`), as in the recommended
        // example, which is the AgentHost's text with the whitespace runs removed.
        let text = if self.text.trim().is_empty() {
            ""
        } else {
            &self.text
        };
        if self.text.is_empty() && self.children.is_empty() {
            out.push_str("/>");
            return;
        }
        out.push('>');
        let _ = write!(out, "{}", Escaped(text));
        for child in &self.children {
            child.write_compact(out);
        }
        let _ = write!(out, "</{}>", self.name);
    }

    /// The first place where `found` differs from `self` as a document of the same
    /// meaning: names, attribute values (in any order, `xmlns` declarations aside),
    /// text other than whitespace, and children in order, except that a run of
    /// differently named siblings may come in any order (JAXB reorders some).
    pub fn difference(&self, found: &Element, path: &str) -> Option<ReadError> {
        let mismatch = |expected: String, found: String| {
            Some(ReadError::Mismatch {
                path: path.to_owned(),
                expected,
                found,
            })
        };
        if self.name != found.name {
            return mismatch(format!("<{}>", self.name), format!("<{}>", found.name));
        }
        let significant = |e: &Element| {
            let mut attributes: Vec<(String, String)> = e
                .attributes
                .iter()
                .filter(|(n, _)| n != "xmlns" && !n.starts_with("xmlns:"))
                .cloned()
                .collect();
            attributes.sort();
            attributes
        };
        let (want, have) = (significant(self), significant(found));
        if want != have {
            let show = |a: &[(String, String)]| {
                a.iter()
                    .map(|(n, v)| format!("{n}={v:?}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            return mismatch(
                format!("attributes [{}]", show(&want)),
                format!("attributes [{}]", show(&have)),
            );
        }
        if self.text.trim() != found.text.trim() {
            return mismatch(
                format!("text {:?}", self.text.trim()),
                format!("text {:?}", found.text.trim()),
            );
        }
        fn names(e: &Element) -> Vec<&str> {
            let mut names: Vec<&str> = e.children.iter().map(|c| c.name.as_str()).collect();
            names.sort_unstable();
            names
        }
        if names(self) != names(found) {
            let list = |e: &Element| {
                let mut counts: Vec<(String, usize)> = Vec::new();
                for child in &e.children {
                    match counts.last_mut() {
                        Some((n, k)) if *n == child.name => *k += 1,
                        _ => counts.push((child.name.clone(), 1)),
                    }
                }
                let shown: Vec<String> = counts
                    .into_iter()
                    .map(|(n, k)| {
                        if k == 1 {
                            format!("<{n}>")
                        } else {
                            format!("{k} <{n}>")
                        }
                    })
                    .collect();
                if shown.is_empty() {
                    "no children".to_owned()
                } else {
                    shown.join(", ")
                }
            };
            return mismatch(list(self), list(found));
        }
        // Same multiset of names: pair the k-th child of each name on both sides.
        let mut seen: Vec<(&str, usize)> = Vec::new();
        for child in &self.children {
            let k = match seen.iter_mut().find(|(n, _)| *n == child.name) {
                Some((_, k)) => {
                    *k += 1;
                    *k
                }
                None => {
                    seen.push((&child.name, 0));
                    0
                }
            };
            let other = found
                .children
                .iter()
                .filter(|c| c.name == child.name)
                .nth(k)
                .expect("same multiset of names");
            let child_path = format!("{path}/{}[{k}]", child.name);
            if let Some(error) = child.difference(other, &child_path) {
                return Some(error);
            }
        }
        None
    }
}

/// Text escaped for XML content or attribute values (`&`, `<`, `>`, `"`).
pub(crate) fn escape_text(text: &str) -> impl fmt::Display + '_ {
    Escaped(text)
}

/// Text escaped for XML content or attribute values (`&`, `<`, `>`, `"`).
struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '&' => f.write_str("&amp;")?,
                '<' => f.write_str("&lt;")?,
                '>' => f.write_str("&gt;")?,
                '"' => f.write_str("&quot;")?,
                _ => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// boost's `encode_char_entities`: a non-empty value of spaces only starts with
/// `&#32;` (so that it survives a round trip); otherwise `<>&"'` are escaped.
struct BoostEscaped<'a>(&'a str);

impl fmt::Display for BoostEscaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        if !s.is_empty() && s.bytes().all(|b| b == b' ') {
            f.write_str("&#32;")?;
            return f.write_str(&s[1..]);
        }
        for c in s.chars() {
            match c {
                '<' => f.write_str("&lt;")?,
                '>' => f.write_str("&gt;")?,
                '&' => f.write_str("&amp;")?,
                '"' => f.write_str("&quot;")?,
                '\'' => f.write_str("&apos;")?,
                _ => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// An element being read, with its path for error messages.
#[derive(Clone, Debug)]
pub(crate) struct Node<'a> {
    pub element: &'a Element,
    path: String,
}

impl<'a> Node<'a> {
    /// The root of a document, checked to be `<name>`.
    pub fn root(element: &'a Element, name: &'static str) -> Result<Self, ReadError> {
        if element.name != name {
            return Err(ReadError::WrongRoot {
                expected: name,
                found: element.name.clone(),
            });
        }
        Ok(Self {
            element,
            path: name.to_owned(),
        })
    }

    /// The element's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The first child called `name`.
    pub fn child(&self, name: &'static str) -> Result<Node<'a>, ReadError> {
        self.optional_child(name)
            .ok_or_else(|| ReadError::MissingElement {
                path: self.path.clone(),
                element: name,
            })
    }

    /// The first child called `name`, if any.
    pub fn optional_child(&self, name: &'static str) -> Option<Node<'a>> {
        self.element
            .children
            .iter()
            .find(|c| c.name == name)
            .map(|element| Node {
                element,
                path: format!("{}/{name}", self.path),
            })
    }

    /// Every child called `name`, in order.
    pub fn children(&self, name: &'static str) -> Vec<Node<'a>> {
        self.element
            .children
            .iter()
            .filter(|c| c.name == name)
            .enumerate()
            .map(|(k, element)| Node {
                element,
                path: format!("{}/{name}[{k}]", self.path),
            })
            .collect()
    }

    /// An attribute's value as written.
    pub fn attribute(&self, name: &'static str) -> Result<&'a str, ReadError> {
        self.element
            .attribute(name)
            .ok_or_else(|| ReadError::MissingAttribute {
                path: self.path.clone(),
                attribute: name,
            })
    }

    /// An attribute parsed as `T`; leading and trailing whitespace is ignored, as
    /// the schemas' `xs:int` and `xs:decimal` do.
    pub fn parsed_attribute<T: FromStr>(
        &self,
        name: &'static str,
        expected: &'static str,
    ) -> Result<T, ReadError> {
        let value = self.attribute(name)?;
        value.trim().parse().map_err(|_| ReadError::BadValue {
            path: format!("{}@{name}", self.path),
            value: value.to_owned(),
            expected,
        })
    }

    /// The element's text.
    pub fn text(&self) -> &'a str {
        &self.element.text
    }

    /// The element's text parsed as `T`, whitespace ignored.
    pub fn parsed_text<T: FromStr>(&self, expected: &'static str) -> Result<T, ReadError> {
        self.element
            .text
            .trim()
            .parse()
            .map_err(|_| ReadError::BadValue {
                path: self.path.clone(),
                value: self.element.text.clone(),
                expected,
            })
    }

    /// The text of the child called `name`.
    pub fn child_text(&self, name: &'static str) -> Result<&'a str, ReadError> {
        Ok(&self.child(name)?.element.text)
    }

    /// The text of the child called `name`, parsed as `T`.
    pub fn parsed_child<T: FromStr>(
        &self,
        name: &'static str,
        expected: &'static str,
    ) -> Result<T, ReadError> {
        self.child(name)?.parsed_text(expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_entities_are_collected_per_element() {
        let root = Element::parse_document(
            "\n  <?xml version=\"1.0\"?>\n<a x=\"1 &amp; 2\"> <b/>t&lt;&#65;<![CDATA[<c>]]></a>",
        )
        .unwrap();
        assert_eq!(root.name, "a");
        assert_eq!(root.attribute("x"), Some("1 & 2"));
        assert_eq!(root.text, " t<A<c>");
        assert_eq!(root.children, vec![Element::new("b")]);
    }

    #[test]
    fn malformed_documents_are_syntax_errors() {
        for bad in [
            "<a><b></a>",
            "<a>",
            "",
            "<a/><b/>",
            "<a>&nope;</a>",
            "text<a/>",
        ] {
            let error = Element::parse_document(bad).unwrap_err();
            assert!(
                matches!(error, ReadError::Syntax { .. } | ReadError::NoRoot),
                "{bad:?}: {error:?}"
            );
        }
    }

    #[test]
    fn boost_writer_keeps_text_before_children_and_marks_space_runs() {
        let root = Element::parse_document("<a k=\"v\">\n  <b>  </b>\n  <c>x'y</c>\n</a>").unwrap();
        let mut out = String::new();
        root.write_boost(&mut out);
        assert_eq!(out, "<a k=\"v\">\n  \n  \n<b>&#32; </b><c>x&apos;y</c></a>");
        let mut compact = String::new();
        root.write_compact(&mut compact);
        assert_eq!(compact, "<a k=\"v\"><b></b><c>x'y</c></a>");
    }

    #[test]
    fn differences_name_the_path() {
        let a = Element::parse_document("<r><p x=\"1\" y=\"2\"/><q>t</q></r>").unwrap();
        let reordered =
            Element::parse_document("<r xmlns=\"n\"><q> t </q><p y=\"2\" x=\"1\"/></r>").unwrap();
        assert_eq!(a.difference(&reordered, "r"), None);
        let changed = Element::parse_document("<r><p x=\"1\" y=\"3\"/><q>t</q></r>").unwrap();
        let error = a.difference(&changed, "r").unwrap();
        assert!(
            matches!(&error, ReadError::Mismatch { path, .. } if path == "r/p[0]"),
            "{error}"
        );
        let missing = Element::parse_document("<r><p x=\"1\" y=\"2\"/></r>").unwrap();
        assert!(a.difference(&missing, "r").is_some());
    }
}

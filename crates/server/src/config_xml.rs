//! HBase's own configuration file, `hbase-site.xml` (Hadoop's configuration
//! XML), read as `accordion server --config` reads a TOML file:
//!
//! ```xml
//! <configuration>
//!   <property><name>hbase.hregion.memstore.flush.size</name><value>128m</value></property>
//! </configuration>
//! ```
//!
//! Each `<property>`'s `<name>` and `<value>` (text trimmed, as Hadoop's
//! `Configuration` trims them); `<description>` and `<final>` are read past.
//! Hadoop's `${variable}` expansion and `<include>` are not supported: a
//! value holding `${` is refused rather than taken literally.
//!
//! Why roxmltree: a small, well-kept read-only XML parser; the file is a
//! few kilobytes read once at start.

/// The `(name, value)` pairs of a Hadoop configuration document, in order.
pub fn properties(text: &str) -> Result<Vec<(String, String)>, String> {
    let doc = roxmltree::Document::parse(text).map_err(|e| format!("not well-formed XML: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "configuration" {
        return Err(format!("the root element is <{}>, not <configuration>", root.tag_name().name()));
    }
    let mut out = Vec::new();
    for property in root.children().filter(roxmltree::Node::is_element) {
        let line = doc.text_pos_at(property.range().start).row;
        match property.tag_name().name() {
            "property" => {}
            "include" => return Err(format!("line {line}: <include> is not supported; merge the files")),
            other => return Err(format!("line {line}: <{other}> where a <property> was expected")),
        }
        let field = |name: &str| {
            property
                .children()
                .find(|c| c.is_element() && c.tag_name().name() == name)
                .map(|c| c.text().unwrap_or_default().trim().to_string())
        };
        let name = field("name").filter(|n| !n.is_empty());
        let name = name.ok_or_else(|| format!("line {line}: a <property> without a <name>"))?;
        let value = field("value").ok_or_else(|| format!("line {line}: property {name} has no <value>"))?;
        if value.contains("${") {
            return Err(format!("line {line}: property {name}: ${{...}} variables are not expanded; write the value"));
        }
        out.push((name, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_are_read_in_order_with_their_text_trimmed() {
        let text = r#"<?xml version="1.0"?>
<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>
<!-- a comment -->
<configuration>
  <property>
    <name> hbase.rootdir </name>
    <value>
      hdfs://nn:8020/hbase
    </value>
    <description>where</description>
    <final>true</final>
  </property>
  <property><name>a</name><value></value></property>
</configuration>"#;
        assert_eq!(
            properties(text),
            Ok(vec![("hbase.rootdir".into(), "hdfs://nn:8020/hbase".into()), ("a".into(), String::new())])
        );
    }

    #[test]
    fn malformed_documents_are_refused_with_where() {
        for (text, expected) in [
            ("<configuration><property><name>a</name>", "not well-formed"),
            ("<conf/>", "not <configuration>"),
            ("<configuration><prop/></configuration>", "line 1: <prop>"),
            ("<configuration><property><value>1</value></property></configuration>", "without a <name>"),
            ("<configuration><property><name>a</name></property></configuration>", "has no <value>"),
            ("<configuration><property><name>a</name><value>${x}</value></property></configuration>", "variables"),
            ("<configuration><include href='x'/></configuration>", "<include>"),
        ] {
            let e = properties(text).expect_err(text);
            assert!(e.contains(expected), "{text}: {e}");
        }
    }
}

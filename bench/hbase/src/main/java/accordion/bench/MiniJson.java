package accordion.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A small JSON reader (objects, arrays, strings, numbers, booleans, null) for CONFIG.json. */
final class MiniJson {
  private final String s;
  private int pos;

  private MiniJson(String s) {
    this.s = s;
  }

  static Object parse(String text) {
    MiniJson p = new MiniJson(text);
    p.ws();
    Object v = p.value();
    p.ws();
    if (p.pos != p.s.length()) {
      throw p.error("trailing characters");
    }
    return v;
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException("bad JSON at offset " + pos + ": " + what);
  }

  private void ws() {
    while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) {
      pos++;
    }
  }

  private Object value() {
    if (pos >= s.length()) {
      throw error("unexpected end");
    }
    char c = s.charAt(pos);
    switch (c) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        return string();
      case 't':
        return literal("true", Boolean.TRUE);
      case 'f':
        return literal("false", Boolean.FALSE);
      case 'n':
        return literal("null", null);
      default:
        return number();
    }
  }

  private Object literal(String word, Object v) {
    if (!s.startsWith(word, pos)) {
      throw error("expected " + word);
    }
    pos += word.length();
    return v;
  }

  private Map<String, Object> object() {
    Map<String, Object> m = new LinkedHashMap<>();
    pos++; // {
    ws();
    if (peek() == '}') {
      pos++;
      return m;
    }
    while (true) {
      ws();
      if (peek() != '"') {
        throw error("expected a key");
      }
      String k = string();
      ws();
      expect(':');
      ws();
      m.put(k, value());
      ws();
      char c = next();
      if (c == '}') {
        return m;
      }
      if (c != ',') {
        throw error("expected , or }");
      }
    }
  }

  private List<Object> array() {
    List<Object> l = new ArrayList<>();
    pos++; // [
    ws();
    if (peek() == ']') {
      pos++;
      return l;
    }
    while (true) {
      ws();
      l.add(value());
      ws();
      char c = next();
      if (c == ']') {
        return l;
      }
      if (c != ',') {
        throw error("expected , or ]");
      }
    }
  }

  private String string() {
    pos++; // "
    StringBuilder b = new StringBuilder();
    while (true) {
      char c = next();
      if (c == '"') {
        return b.toString();
      }
      if (c == '\\') {
        char e = next();
        switch (e) {
          case '"': b.append('"'); break;
          case '\\': b.append('\\'); break;
          case '/': b.append('/'); break;
          case 'b': b.append('\b'); break;
          case 'f': b.append('\f'); break;
          case 'n': b.append('\n'); break;
          case 'r': b.append('\r'); break;
          case 't': b.append('\t'); break;
          case 'u':
            if (pos + 4 > s.length()) {
              throw error("bad \\u escape");
            }
            b.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
            pos += 4;
            break;
          default:
            throw error("bad escape");
        }
      } else {
        b.append(c);
      }
    }
  }

  private Object number() {
    int start = pos;
    while (pos < s.length() && "+-0123456789.eE".indexOf(s.charAt(pos)) >= 0) {
      pos++;
    }
    String t = s.substring(start, pos);
    if (t.isEmpty()) {
      throw error("unexpected character");
    }
    if (t.indexOf('.') < 0 && t.indexOf('e') < 0 && t.indexOf('E') < 0) {
      return Long.parseLong(t);
    }
    return Double.parseDouble(t);
  }

  private char peek() {
    if (pos >= s.length()) {
      throw error("unexpected end");
    }
    return s.charAt(pos);
  }

  private char next() {
    char c = peek();
    pos++;
    return c;
  }

  private void expect(char c) {
    if (next() != c) {
      throw error("expected " + c);
    }
  }

  /** Appends {@code v} as a JSON string literal. */
  static void quote(StringBuilder b, String v) {
    b.append('"');
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      switch (c) {
        case '"': b.append("\\\""); break;
        case '\\': b.append("\\\\"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        case '\t': b.append("\\t"); break;
        default:
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    b.append('"');
  }
}

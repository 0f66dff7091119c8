// Text for SVG/XML: the view export, the chart export and the browser's chart canvas share it.
#pragma once

#include <string>
#include <string_view>

namespace convlab::app {

// &, <, > and " as entities (text and attribute values alike); control characters other than tab
// and newline dropped, because XML 1.0 does not allow them.
inline std::string xml_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;
        }
    }
    return out;
}

}  // namespace convlab::app

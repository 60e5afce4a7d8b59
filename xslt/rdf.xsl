<?xml version="1.0" encoding="UTF-8"?>
<!--
  rdf.xsl: a clip or a whole page as RDF/XML.

  Input: a clip document, root <page> (the whole semantic hierarchy) or
  <clip> (a named clip). Output: one rdf:RDF document in the vocabulary
  https://semclip.dev/ns/hierarchy/1# (prefix sc).

  Parameter:
    base   an absolute http(s) IRI without fragment, e.g.
           http://127.0.0.1:8080/clips/quotes (semclip passes the clip's URL)

  IRIs:
    {base}                          the clip (when the root is <clip>)
    {base}#{percent-encoded xpath}  each hierarchy element, named by its id
                                    (its xpath attribute); the fragment holds
                                    only unreserved characters and %XX

  Triples, per hierarchy element:
    rdf:type      sc:Page, sc:Section, sc:Table, sc:Row, sc:Cell, sc:List,
                  sc:Item, sc:Text, sc:Terms, sc:Term, sc:Def, sc:Pre,
                  sc:Quote, sc:Address, sc:Keywords (CamelCase of the name)
    sc:xpath      the id (literal)
    sc:label, sc:key, sc:col, sc:keycol   literals, when present
    sc:role, sc:byline, sc:date, sc:clip  literals, when present (extraction
                                          results: docs/watch-files.md, "Extraction and templates")
    sc:level, sc:ordinal                  xsd:integer, when present
    sc:num        xsd:decimal (xsd:double if the value only fits that, a
                  plain literal if neither)
    sc:href       an IRI when the link is an absolute http(s) IRI that can be
                  written as one (non-ASCII and spaces percent-encoded), else
                  the literal text
    sc:value      a leaf's text
    sc:parent     the parent element (not for the top: the page, or a clip's
                  selected elements)
    sc:position   1-based among its sibling elements, xsd:integer (not for
                  the top either)
  The page also gets sc:url (like sc:href), sc:lang and sc:version literals;
  the clip is an sc:Clip with sc:watch, sc:name, sc:select literals,
  sc:count (xsd:integer), sc:url and an sc:member link to each selected
  element. Literals carry no language tag.
-->
<xsl:stylesheet version="1.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    xmlns:sc="https://semclip.dev/ns/hierarchy/1#"
    xmlns:str="http://exslt.org/strings"
    exclude-result-prefixes="str">
  <xsl:output method="xml" encoding="UTF-8" indent="yes"/>
  <xsl:strip-space elements="*"/>

  <xsl:param name="base" select="''"/>

  <xsl:variable name="sc" select="'https://semclip.dev/ns/hierarchy/1#'"/>
  <xsl:variable name="xsd" select="'http://www.w3.org/2001/XMLSchema#'"/>
  <xsl:variable name="lower" select="'abcdefghijklmnopqrstuvwxyz'"/>
  <xsl:variable name="upper" select="'ABCDEFGHIJKLMNOPQRSTUVWXYZ'"/>
  <xsl:variable name="digits" select="'0123456789'"/>
  <!-- What str:encode-uri(s, true()) may leave that an IRI fragment here
       must not hold ('@' and "'" with libxml2's escaping; the rest as a
       safety net), and their %XX codes, two hex digits each. -->
  <xsl:variable name="fragment-unsafe">'@[]=" &lt;&gt;\^`{|}#</xsl:variable>
  <xsl:variable name="fragment-codes" select="'27405B5D3D22203C3E5C5E607B7C7D23'"/>
  <!-- The ASCII characters an http(s) IRI may hold. -->
  <xsl:variable name="iri-ascii" select="concat($lower, $upper, $digits, &quot;-._~:/?#[]@!$&amp;'()*+,;=%&quot;)"/>

  <xsl:template match="/">
    <rdf:RDF>
      <xsl:apply-templates select="*" mode="top"/>
    </rdf:RDF>
  </xsl:template>

  <!-- A named clip: the clip resource, then its selected elements. -->
  <xsl:template match="clip" mode="top">
    <rdf:Description rdf:about="{$base}">
      <rdf:type rdf:resource="{$sc}Clip"/>
      <xsl:if test="@watch"><sc:watch><xsl:value-of select="@watch"/></sc:watch></xsl:if>
      <xsl:if test="@name"><sc:name><xsl:value-of select="@name"/></sc:name></xsl:if>
      <xsl:if test="@select"><sc:select><xsl:value-of select="@select"/></sc:select></xsl:if>
      <xsl:for-each select="@count">
        <xsl:call-template name="integer"><xsl:with-param name="property" select="'count'"/></xsl:call-template>
      </xsl:for-each>
      <xsl:for-each select="@url">
        <xsl:call-template name="link"><xsl:with-param name="property" select="'url'"/></xsl:call-template>
      </xsl:for-each>
      <xsl:for-each select="*">
        <sc:member>
          <xsl:attribute name="rdf:resource"><xsl:call-template name="iri"/></xsl:attribute>
        </sc:member>
      </xsl:for-each>
    </rdf:Description>
    <xsl:apply-templates select="*" mode="node">
      <xsl:with-param name="top" select="true()"/>
    </xsl:apply-templates>
  </xsl:template>

  <!-- The whole page (or any other root). -->
  <xsl:template match="*" mode="top">
    <xsl:apply-templates select="." mode="node">
      <xsl:with-param name="top" select="true()"/>
    </xsl:apply-templates>
  </xsl:template>

  <!-- One hierarchy element, then its children (position() is the
       element's place among its sibling elements). -->
  <xsl:template match="*" mode="node">
    <xsl:param name="top" select="false()"/>
    <xsl:param name="parent-iri" select="''"/>
    <xsl:variable name="iri"><xsl:call-template name="iri"/></xsl:variable>
    <xsl:variable name="name" select="local-name()"/>
    <rdf:Description rdf:about="{$iri}">
      <rdf:type rdf:resource="{$sc}{translate(substring($name, 1, 1), $lower, $upper)}{substring($name, 2)}"/>
      <xsl:if test="@xpath"><sc:xpath><xsl:value-of select="@xpath"/></sc:xpath></xsl:if>
      <xsl:if test="@label"><sc:label><xsl:value-of select="@label"/></sc:label></xsl:if>
      <xsl:if test="@key"><sc:key><xsl:value-of select="@key"/></sc:key></xsl:if>
      <xsl:if test="@col"><sc:col><xsl:value-of select="@col"/></sc:col></xsl:if>
      <xsl:if test="@keycol"><sc:keycol><xsl:value-of select="@keycol"/></sc:keycol></xsl:if>
      <xsl:if test="@role"><sc:role><xsl:value-of select="@role"/></sc:role></xsl:if>
      <xsl:if test="@byline"><sc:byline><xsl:value-of select="@byline"/></sc:byline></xsl:if>
      <xsl:if test="@date"><sc:date><xsl:value-of select="@date"/></sc:date></xsl:if>
      <xsl:if test="@clip"><sc:clip><xsl:value-of select="@clip"/></sc:clip></xsl:if>
      <xsl:for-each select="@level | @ordinal">
        <xsl:call-template name="integer"><xsl:with-param name="property" select="local-name()"/></xsl:call-template>
      </xsl:for-each>
      <xsl:for-each select="@num"><xsl:call-template name="number"/></xsl:for-each>
      <xsl:for-each select="@href">
        <xsl:call-template name="link"><xsl:with-param name="property" select="'href'"/></xsl:call-template>
      </xsl:for-each>
      <xsl:if test="self::page">
        <xsl:for-each select="@url">
          <xsl:call-template name="link"><xsl:with-param name="property" select="'url'"/></xsl:call-template>
        </xsl:for-each>
        <xsl:if test="@lang"><sc:lang><xsl:value-of select="@lang"/></sc:lang></xsl:if>
        <xsl:if test="@version"><sc:version><xsl:value-of select="@version"/></sc:version></xsl:if>
      </xsl:if>
      <xsl:if test="not(*) and not(self::page) and string(.) != ''">
        <sc:value><xsl:value-of select="."/></sc:value>
      </xsl:if>
      <xsl:if test="not($top)">
        <sc:parent rdf:resource="{$parent-iri}"/>
        <sc:position rdf:datatype="{$xsd}integer"><xsl:value-of select="position()"/></sc:position>
      </xsl:if>
    </rdf:Description>
    <xsl:apply-templates select="*" mode="node">
      <xsl:with-param name="parent-iri" select="string($iri)"/>
    </xsl:apply-templates>
  </xsl:template>

  <!-- The IRI of the context element: {base}#{its xpath, percent-encoded}. -->
  <xsl:template name="iri">
    <xsl:value-of select="$base"/>
    <xsl:text>#</xsl:text>
    <xsl:choose>
      <xsl:when test="@xpath">
        <xsl:call-template name="fragment-escape">
          <xsl:with-param name="s" select="str:encode-uri(@xpath, true())"/>
        </xsl:call-template>
      </xsl:when>
      <xsl:otherwise>node-<xsl:value-of select="generate-id()"/></xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <!-- `s` with each character of $fragment-unsafe written as %XX. Splits in
       halves, so the recursion is only log2(length) deep. -->
  <xsl:template name="fragment-escape">
    <xsl:param name="s"/>
    <xsl:variable name="n" select="string-length($s)"/>
    <xsl:choose>
      <xsl:when test="translate($s, $fragment-unsafe, '') = $s"><xsl:value-of select="$s"/></xsl:when>
      <xsl:when test="$n = 1">
        <xsl:text>%</xsl:text>
        <xsl:value-of select="substring($fragment-codes, 2 * string-length(substring-before($fragment-unsafe, $s)) + 1, 2)"/>
      </xsl:when>
      <xsl:otherwise>
        <xsl:variable name="half" select="floor($n div 2)"/>
        <xsl:call-template name="fragment-escape">
          <xsl:with-param name="s" select="substring($s, 1, $half)"/>
        </xsl:call-template>
        <xsl:call-template name="fragment-escape">
          <xsl:with-param name="s" select="substring($s, $half + 1)"/>
        </xsl:call-template>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <!-- sc:{property}: the context attribute as xsd:integer when it is one,
       else as a plain literal. -->
  <xsl:template name="integer">
    <xsl:param name="property"/>
    <xsl:element name="sc:{$property}">
      <xsl:if test="string-length(.) &gt; 0 and translate(., $digits, '') = ''">
        <xsl:attribute name="rdf:datatype"><xsl:value-of select="concat($xsd, 'integer')"/></xsl:attribute>
      </xsl:if>
      <xsl:value-of select="."/>
    </xsl:element>
  </xsl:template>

  <!-- sc:num from the context @num: xsd:decimal for the hierarchy's plain
       decimal form (-1234.56), xsd:double for an exponent form, INF or NaN,
       else a plain literal. -->
  <xsl:template name="number">
    <xsl:variable name="n" select="string(.)"/>
    <xsl:variable name="unsigned">
      <xsl:choose>
        <xsl:when test="starts-with($n, '-') or starts-with($n, '+')"><xsl:value-of select="substring($n, 2)"/></xsl:when>
        <xsl:otherwise><xsl:value-of select="$n"/></xsl:otherwise>
      </xsl:choose>
    </xsl:variable>
    <xsl:variable name="decimal">
      <xsl:call-template name="is-decimal"><xsl:with-param name="s" select="string($unsigned)"/></xsl:call-template>
    </xsl:variable>
    <xsl:variable name="e" select="translate($unsigned, 'E', 'e')"/>
    <xsl:variable name="mantissa">
      <xsl:call-template name="is-decimal"><xsl:with-param name="s" select="substring-before($e, 'e')"/></xsl:call-template>
    </xsl:variable>
    <xsl:variable name="exponent" select="substring-after($e, 'e')"/>
    <xsl:variable name="exponent-digits">
      <xsl:choose>
        <xsl:when test="starts-with($exponent, '-') or starts-with($exponent, '+')"><xsl:value-of select="substring($exponent, 2)"/></xsl:when>
        <xsl:otherwise><xsl:value-of select="$exponent"/></xsl:otherwise>
      </xsl:choose>
    </xsl:variable>
    <xsl:choose>
      <xsl:when test="$decimal = 'yes'">
        <sc:num rdf:datatype="{$xsd}decimal"><xsl:value-of select="$n"/></sc:num>
      </xsl:when>
      <xsl:when test="($mantissa = 'yes' and string-length($exponent-digits) &gt; 0 and translate($exponent-digits, $digits, '') = '')
                      or $unsigned = 'INF' or $n = 'NaN'">
        <sc:num rdf:datatype="{$xsd}double"><xsl:value-of select="$n"/></sc:num>
      </xsl:when>
      <xsl:otherwise>
        <sc:num><xsl:value-of select="$n"/></sc:num>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <!-- 'yes' when `s` is digits with at most one '.' and at least one digit. -->
  <xsl:template name="is-decimal">
    <xsl:param name="s"/>
    <xsl:variable name="marks" select="translate($s, $digits, '')"/>
    <xsl:if test="($marks = '' or $marks = '.') and string-length($s) &gt; string-length($marks)">yes</xsl:if>
  </xsl:template>

  <!-- sc:{property} for the context link attribute: an IRI resource when it
       is an absolute http(s) IRI, else the literal text. -->
  <xsl:template name="link">
    <xsl:param name="property"/>
    <xsl:variable name="iri">
      <xsl:call-template name="http-iri"><xsl:with-param name="h" select="string(.)"/></xsl:call-template>
    </xsl:variable>
    <xsl:element name="sc:{$property}">
      <xsl:choose>
        <xsl:when test="string($iri) != ''">
          <xsl:attribute name="rdf:resource"><xsl:value-of select="$iri"/></xsl:attribute>
        </xsl:when>
        <xsl:otherwise><xsl:value-of select="."/></xsl:otherwise>
      </xsl:choose>
    </xsl:element>
  </xsl:template>

  <!-- `h` as an absolute http(s) IRI, or nothing when it cannot be one.
       Conservative: non-ASCII and other characters an IRI cannot hold are
       percent-encoded (the fragment apart, so its '#' stays) when `h` has
       no '%' of its own; then the result must be ASCII IRI characters with
       well-formed %XX, at most one '#', no '[' or ']' (IPv6 hosts are given
       up), a host of letters, digits, '.', '-', '_', '~', %XX and a port of
       digits. Anything else stays a literal. -->
  <xsl:template name="http-iri">
    <xsl:param name="h"/>
    <xsl:variable name="scheme" select="translate(substring-before($h, '://'), $upper, $lower)"/>
    <xsl:if test="($scheme = 'http' or $scheme = 'https') and string-length($h) &lt;= 2048">
      <xsl:variable name="u">
        <xsl:choose>
          <xsl:when test="translate($h, $iri-ascii, '') = ''"><xsl:value-of select="$h"/></xsl:when>
          <xsl:when test="not(contains($h, '%'))">
            <xsl:value-of select="str:encode-uri(substring-before(concat($h, '#'), '#'), false())"/>
            <xsl:if test="contains($h, '#')">
              <xsl:text>#</xsl:text>
              <xsl:value-of select="str:encode-uri(substring-after($h, '#'), false())"/>
            </xsl:if>
          </xsl:when>
        </xsl:choose>
      </xsl:variable>
      <xsl:variable name="rest" select="substring-after($u, '://')"/>
      <xsl:variable name="authority" select="substring-before(concat(translate($rest, '?#', '//'), '/'), '/')"/>
      <xsl:variable name="host" select="substring-before(concat($authority, ':'), ':')"/>
      <xsl:variable name="port" select="substring-after($authority, ':')"/>
      <!-- Only an href with a '%' of its own needs checking: the escapes
           str:encode-uri writes are well-formed (and may be many). -->
      <xsl:variable name="percent-ok">
        <xsl:choose>
          <xsl:when test="not(contains($h, '%'))">ok</xsl:when>
          <xsl:otherwise>
            <xsl:call-template name="percent-ok"><xsl:with-param name="s" select="string($u)"/></xsl:call-template>
          </xsl:otherwise>
        </xsl:choose>
      </xsl:variable>
      <xsl:if test="string($u) != ''
                    and translate($u, $iri-ascii, '') = ''
                    and not(contains($u, '[') or contains($u, ']'))
                    and not(contains(substring-after($u, '#'), '#'))
                    and $host != ''
                    and translate($host, concat($lower, $upper, $digits, '.-_~%'), '') = ''
                    and translate($port, $digits, '') = ''
                    and $percent-ok = 'ok'">
        <xsl:value-of select="$u"/>
      </xsl:if>
    </xsl:if>
  </xsl:template>

  <!-- 'ok' when every '%' in `s` starts a %XX escape. -->
  <xsl:template name="percent-ok">
    <xsl:param name="s"/>
    <xsl:choose>
      <xsl:when test="not(contains($s, '%'))">ok</xsl:when>
      <xsl:otherwise>
        <xsl:variable name="hex" select="substring(substring-after($s, '%'), 1, 2)"/>
        <xsl:if test="string-length($hex) = 2 and translate($hex, '0123456789abcdefABCDEF', '') = ''">
          <xsl:call-template name="percent-ok">
            <xsl:with-param name="s" select="substring-after($s, '%')"/>
          </xsl:call-template>
        </xsl:if>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>
</xsl:stylesheet>

<?xml version="1.0" encoding="UTF-8"?>
<!--
  html.xsl: semclip's default HTML rendering of a clip.

  Input: a clip document, either the whole semantic hierarchy (root <page>)
  or a named clip (root <clip watch=".." name=".." select=".." count=".."
  url=".."> holding copies of the selected hierarchy elements). Vocabulary:
  docs/hierarchy.md, "The vocabulary (version 2)".

  Output: one <div class="semclip-clip"> HTML fragment for a portal. Every
  element emitted for a hierarchy node carries data-xpath="{@xpath}" (the
  node's id), numbers their data-num. semclip sanitizes the result
  afterwards (semclip::serve::render::sanitize) whatever the stylesheet
  emits.

  Parameters: the allow-list clients may set from the query string
  (semclip::serve::render::HTML_PARAMS); anything else is refused before
  the transform runs.
    title         heading text; default: the clip's name, or the page's label
    show-caption  'yes' (default) or 'no': whether tables get a <caption>
    decimal       informational (the decimal separator the portal expects);
                  this stylesheet ignores it: values are shown as the page
                  wrote them and data-num holds the canonical number
    lang          the fragment's lang attribute; default: the page's lang
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html" encoding="UTF-8" indent="no"/>
  <xsl:strip-space elements="*"/>

  <xsl:param name="title" select="''"/>
  <xsl:param name="show-caption" select="'yes'"/>
  <xsl:param name="decimal" select="''"/>
  <xsl:param name="lang" select="''"/>

  <!-- A table's cells by column: Muenchian grouping of the header row.
       The group is the cell's grandparent (a table, or a clip of rows). -->
  <xsl:key name="col" match="cell[@col]" use="concat(generate-id(../..), '|', @col)"/>

  <xsl:variable name="letters" select="'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'"/>
  <xsl:variable name="scheme-chars" select="concat($letters, '0123456789+-.')"/>

  <!-- The page the clip came from: relative links are resolved against it,
       so they point at the source site and never into the portal. -->
  <xsl:variable name="source" select="normalize-space(/*/@url)"/>
  <xsl:variable name="source-ok" select="starts-with($source, 'http://') or starts-with($source, 'https://')"/>
  <xsl:variable name="source-nofragment" select="substring-before(concat($source, '#'), '#')"/>
  <xsl:variable name="source-noquery" select="substring-before(concat($source-nofragment, '?'), '?')"/>
  <xsl:variable name="source-authority" select="substring-before(concat(substring-after($source-noquery, '://'), '/'), '/')"/>
  <xsl:variable name="source-origin" select="concat(substring-before($source-noquery, '://'), '://', $source-authority)"/>
  <xsl:variable name="source-path" select="substring-after(substring-after($source-noquery, '://'), $source-authority)"/>
  <xsl:variable name="source-directory">
    <xsl:value-of select="$source-origin"/>
    <xsl:choose>
      <xsl:when test="$source-path = ''">/</xsl:when>
      <xsl:otherwise>
        <xsl:call-template name="through-last-slash">
          <xsl:with-param name="s" select="$source-path"/>
        </xsl:call-template>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:variable>

  <!-- The root: one div. -->
  <xsl:template match="/">
    <xsl:apply-templates select="*" mode="root"/>
  </xsl:template>

  <xsl:template match="*" mode="root">
    <div class="semclip-clip">
      <xsl:if test="self::clip">
        <xsl:attribute name="data-watch"><xsl:value-of select="@watch"/></xsl:attribute>
        <xsl:attribute name="data-clip"><xsl:value-of select="@name"/></xsl:attribute>
      </xsl:if>
      <xsl:if test="not(self::clip) and @xpath">
        <xsl:attribute name="data-xpath"><xsl:value-of select="@xpath"/></xsl:attribute>
      </xsl:if>
      <xsl:choose>
        <xsl:when test="$lang != ''">
          <xsl:attribute name="lang"><xsl:value-of select="$lang"/></xsl:attribute>
        </xsl:when>
        <xsl:when test="@lang">
          <xsl:attribute name="lang"><xsl:value-of select="@lang"/></xsl:attribute>
        </xsl:when>
      </xsl:choose>
      <xsl:variable name="heading">
        <xsl:choose>
          <xsl:when test="$title != ''"><xsl:value-of select="$title"/></xsl:when>
          <xsl:when test="self::clip"><xsl:value-of select="@name"/></xsl:when>
          <xsl:otherwise><xsl:value-of select="@label"/></xsl:otherwise>
        </xsl:choose>
      </xsl:variable>
      <xsl:if test="string($heading) != ''">
        <h2 class="semclip-title"><xsl:value-of select="$heading"/></h2>
      </xsl:if>
      <xsl:apply-templates select="*"/>
    </div>
  </xsl:template>

  <!-- A page selected by a clip (select="/page"). -->
  <xsl:template match="page">
    <div class="semclip-page" data-xpath="{@xpath}">
      <xsl:apply-templates select="*"/>
    </div>
  </xsl:template>

  <xsl:template match="section">
    <xsl:variable name="depth" select="count(ancestor-or-self::section)"/>
    <div class="semclip-section" data-xpath="{@xpath}">
      <xsl:if test="@label">
        <!-- The clip's title is h2; sections go h3, h4, h5, then h6 for all deeper. -->
        <xsl:variable name="rank">
          <xsl:choose>
            <xsl:when test="$depth &gt;= 4">6</xsl:when>
            <xsl:otherwise><xsl:value-of select="$depth + 2"/></xsl:otherwise>
          </xsl:choose>
        </xsl:variable>
        <xsl:element name="h{$rank}">
          <xsl:value-of select="@label"/>
        </xsl:element>
      </xsl:if>
      <xsl:apply-templates select="*"/>
    </div>
  </xsl:template>

  <xsl:template match="text">
    <xsl:choose>
      <xsl:when test="*">
        <div class="semclip-text" data-xpath="{@xpath}">
          <xsl:call-template name="label-paragraph"/>
          <xsl:apply-templates select="*"/>
        </div>
      </xsl:when>
      <xsl:otherwise>
        <p data-xpath="{@xpath}">
          <xsl:call-template name="num"/>
          <xsl:call-template name="own-text"/>
        </p>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <xsl:template match="pre">
    <pre data-xpath="{@xpath}"><xsl:value-of select="."/></pre>
  </xsl:template>

  <xsl:template match="quote">
    <blockquote data-xpath="{@xpath}">
      <xsl:choose>
        <xsl:when test="*">
          <xsl:call-template name="label-paragraph"/>
          <xsl:apply-templates select="*"/>
        </xsl:when>
        <xsl:otherwise>
          <p><xsl:call-template name="own-text"/></p>
        </xsl:otherwise>
      </xsl:choose>
    </blockquote>
  </xsl:template>

  <xsl:template match="address">
    <address data-xpath="{@xpath}">
      <xsl:call-template name="content"/>
    </address>
  </xsl:template>

  <xsl:template match="keywords">
    <p class="semclip-keywords" data-xpath="{@xpath}"><xsl:value-of select="."/></p>
  </xsl:template>

  <!-- Lists -->
  <xsl:template match="list">
    <ul data-xpath="{@xpath}">
      <xsl:apply-templates select="*"/>
    </ul>
  </xsl:template>

  <xsl:template match="item">
    <xsl:call-template name="li"/>
  </xsl:template>

  <xsl:template name="li">
    <li data-xpath="{@xpath}">
      <xsl:call-template name="num"/>
      <xsl:call-template name="content"/>
    </li>
  </xsl:template>

  <!-- Definition lists: a term owning definitions gives its dt, then a dd each. -->
  <xsl:template match="terms">
    <dl data-xpath="{@xpath}">
      <xsl:apply-templates select="*"/>
    </dl>
  </xsl:template>

  <xsl:template match="term">
    <xsl:call-template name="dt"/>
  </xsl:template>

  <xsl:template name="dt">
    <dt data-xpath="{@xpath}">
      <xsl:call-template name="num"/>
      <xsl:call-template name="own-text"/>
    </dt>
    <xsl:apply-templates select="*"/>
  </xsl:template>

  <xsl:template match="def">
    <xsl:call-template name="dd"/>
  </xsl:template>

  <xsl:template name="dd">
    <dd data-xpath="{@xpath}">
      <xsl:call-template name="num"/>
      <xsl:call-template name="content"/>
    </dd>
  </xsl:template>

  <!-- Tables -->
  <xsl:template match="table">
    <table class="semclip-table" data-xpath="{@xpath}">
      <xsl:if test="@label and $show-caption != 'no'">
        <caption><xsl:value-of select="@label"/></caption>
      </xsl:if>
      <xsl:call-template name="grid">
        <xsl:with-param name="keycol" select="string(@keycol)"/>
      </xsl:call-template>
    </table>
  </xsl:template>

  <!-- The header row and body of the context node's rows (context: a
       table, or a clip of rows). Columns are the distinct @col of the
       cells in order of first appearance; each row's cells are matched to
       them by @col, cells without one come last. -->
  <xsl:template name="grid">
    <xsl:param name="keycol" select="''"/>
    <xsl:variable name="cols" select="row/cell[@col][generate-id() = generate-id(key('col', concat(generate-id(current()), '|', @col))[1])]"/>
    <xsl:if test="$cols or $keycol != ''">
      <thead>
        <tr>
          <th scope="col"><xsl:value-of select="$keycol"/></th>
          <xsl:for-each select="$cols">
            <th scope="col" data-col="{@col}"><xsl:value-of select="@col"/></th>
          </xsl:for-each>
        </tr>
      </thead>
    </xsl:if>
    <tbody>
      <xsl:for-each select="row">
        <xsl:variable name="row" select="."/>
        <tr data-xpath="{@xpath}">
          <xsl:if test="@key">
            <xsl:attribute name="data-key"><xsl:value-of select="@key"/></xsl:attribute>
          </xsl:if>
          <xsl:choose>
            <xsl:when test="not(cell)">
              <!-- A label row: one cell across the table. -->
              <th scope="rowgroup" colspan="{count($cols) + 1}"><xsl:value-of select="@key"/></th>
            </xsl:when>
            <xsl:otherwise>
              <th scope="row"><xsl:value-of select="@key"/></th>
              <xsl:for-each select="$cols">
                <xsl:variable name="col" select="string(@col)"/>
                <xsl:variable name="cell" select="$row/cell[@col = $col][1]"/>
                <xsl:choose>
                  <xsl:when test="$cell">
                    <xsl:for-each select="$cell"><xsl:call-template name="td"/></xsl:for-each>
                  </xsl:when>
                  <xsl:otherwise><td></td></xsl:otherwise>
                </xsl:choose>
              </xsl:for-each>
              <xsl:for-each select="cell[not(@col)]"><xsl:call-template name="td"/></xsl:for-each>
            </xsl:otherwise>
          </xsl:choose>
        </tr>
      </xsl:for-each>
    </tbody>
  </xsl:template>

  <xsl:template match="cell">
    <xsl:call-template name="td"/>
  </xsl:template>

  <xsl:template name="td">
    <td data-xpath="{@xpath}">
      <xsl:if test="@col">
        <xsl:attribute name="data-col"><xsl:value-of select="@col"/></xsl:attribute>
      </xsl:if>
      <xsl:call-template name="num"/>
      <xsl:call-template name="content"/>
    </td>
  </xsl:template>

  <!-- Elements a clip selected without their container: all of one kind
       are gathered into one container where the first of them is. -->
  <xsl:template match="clip/row">
    <xsl:if test="not(preceding-sibling::row)">
      <table class="semclip-table">
        <xsl:for-each select="..">
          <xsl:call-template name="grid"/>
        </xsl:for-each>
      </table>
    </xsl:if>
  </xsl:template>

  <xsl:template match="clip/cell">
    <xsl:if test="not(preceding-sibling::cell)">
      <table class="semclip-table">
        <tbody>
          <xsl:for-each select="../cell">
            <tr>
              <th scope="row"><xsl:value-of select="@col"/></th>
              <xsl:call-template name="td"/>
            </tr>
          </xsl:for-each>
        </tbody>
      </table>
    </xsl:if>
  </xsl:template>

  <xsl:template match="clip/item">
    <xsl:if test="not(preceding-sibling::item)">
      <ul>
        <xsl:for-each select="../item"><xsl:call-template name="li"/></xsl:for-each>
      </ul>
    </xsl:if>
  </xsl:template>

  <xsl:template match="clip/term | clip/def">
    <xsl:if test="not(preceding-sibling::term | preceding-sibling::def)">
      <dl>
        <xsl:for-each select="../term | ../def">
          <xsl:choose>
            <xsl:when test="self::term"><xsl:call-template name="dt"/></xsl:when>
            <xsl:otherwise><xsl:call-template name="dd"/></xsl:otherwise>
          </xsl:choose>
        </xsl:for-each>
      </dl>
    </xsl:if>
  </xsl:template>

  <!-- An element of a later vocabulary: its text, its children. -->
  <xsl:template match="*">
    <div class="semclip-other" data-xpath="{@xpath}">
      <xsl:call-template name="content"/>
    </div>
  </xsl:template>

  <!-- Helpers -->

  <!-- What a node holds: its label and children when it owns structure,
       else its text (a link when it has @href). -->
  <xsl:template name="content">
    <xsl:choose>
      <xsl:when test="*">
        <xsl:if test="@label">
          <span class="semclip-label"><xsl:call-template name="own-text"/></span>
        </xsl:if>
        <xsl:apply-templates select="*"/>
      </xsl:when>
      <xsl:otherwise>
        <xsl:call-template name="own-text"/>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <xsl:template name="label-paragraph">
    <xsl:if test="@label">
      <p class="semclip-label"><xsl:call-template name="own-text"/></p>
    </xsl:if>
  </xsl:template>

  <!-- The node's own text (its label when it owns structure), as a link
       when it has a non-empty @href. -->
  <xsl:template name="own-text">
    <xsl:variable name="text">
      <xsl:choose>
        <xsl:when test="*"><xsl:value-of select="@label"/></xsl:when>
        <xsl:otherwise><xsl:value-of select="."/></xsl:otherwise>
      </xsl:choose>
    </xsl:variable>
    <xsl:variable name="target">
      <xsl:if test="normalize-space(@href) != ''">
        <xsl:call-template name="resolve">
          <xsl:with-param name="href" select="normalize-space(@href)"/>
        </xsl:call-template>
      </xsl:if>
    </xsl:variable>
    <xsl:choose>
      <xsl:when test="string($target) != ''">
        <a href="{$target}"><xsl:value-of select="$text"/></a>
      </xsl:when>
      <xsl:otherwise><xsl:value-of select="$text"/></xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <xsl:template name="num">
    <xsl:if test="@num">
      <xsl:attribute name="data-num"><xsl:value-of select="@num"/></xsl:attribute>
    </xsl:if>
  </xsl:template>

  <!-- A link target made absolute against the source page (dot segments
       are left for the browser). One with a scheme is kept as it is (the
       sanitizer keeps only http, https and mailto); a relative one gives
       nothing when the source page is not an http(s) URL: the text is shown
       without a link. -->
  <xsl:template name="resolve">
    <xsl:param name="href"/>
    <xsl:variable name="scheme" select="substring-before($href, ':')"/>
    <xsl:choose>
      <xsl:when test="$scheme != '' and translate(substring($scheme, 1, 1), $letters, '') = '' and translate($scheme, $scheme-chars, '') = ''">
        <xsl:value-of select="$href"/>
      </xsl:when>
      <xsl:when test="not($source-ok)"/>
      <xsl:when test="starts-with($href, '//')">
        <xsl:value-of select="concat(substring-before($source, '://'), ':', $href)"/>
      </xsl:when>
      <xsl:when test="starts-with($href, '/')">
        <xsl:value-of select="concat($source-origin, $href)"/>
      </xsl:when>
      <xsl:when test="starts-with($href, '#')">
        <xsl:value-of select="concat($source-nofragment, $href)"/>
      </xsl:when>
      <xsl:when test="starts-with($href, '?')">
        <xsl:value-of select="concat($source-noquery, $href)"/>
      </xsl:when>
      <xsl:otherwise>
        <xsl:value-of select="concat($source-directory, $href)"/>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <!-- `s` up to and including its last '/' (nothing when it has none). -->
  <xsl:template name="through-last-slash">
    <xsl:param name="s"/>
    <xsl:if test="contains($s, '/')">
      <xsl:value-of select="concat(substring-before($s, '/'), '/')"/>
      <xsl:call-template name="through-last-slash">
        <xsl:with-param name="s" select="substring-after($s, '/')"/>
      </xsl:call-template>
    </xsl:if>
  </xsl:template>
</xsl:stylesheet>

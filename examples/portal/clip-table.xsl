<?xml version="1.0" encoding="UTF-8"?>
<!-- A portal's own stylesheet for a semclip clip fragment
     (GET /clips/WATCH/CLIP?format=xml&fragment=1): one table row per row
     of the clip, its key first, then its cells. -->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html" encoding="UTF-8"/>
  <xsl:template match="/clip">
    <table class="portal-clip" data-clip="{@name}">
      <xsl:for-each select="descendant-or-self::row">
        <tr>
          <th scope="row"><xsl:value-of select="@key"/></th>
          <xsl:for-each select="cell">
            <td data-col="{@col}"><xsl:value-of select="."/></td>
          </xsl:for-each>
        </tr>
      </xsl:for-each>
    </table>
  </xsl:template>
</xsl:stylesheet>

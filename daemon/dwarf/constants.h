// The DWARF numbers this reader uses (DWARF 5, sections 7.5 to 7.29, and the GNU extensions GCC
// and dwz emit). Our own list rather than elfutils' <dwarf.h>, so that the library needs nothing
// of elfutils, not even a header.
#ifndef JITSYM_DAEMON_DWARF_CONSTANTS_H_
#define JITSYM_DAEMON_DWARF_CONSTANTS_H_

#include <cstdint>

namespace jitsym::dwarf {

// Unit types (DWARF 5 7.5.1; the GNU split DWARF 4 units are read as their DWARF 5 kinds).
inline constexpr uint8_t DW_UT_compile = 0x01;
inline constexpr uint8_t DW_UT_type = 0x02;
inline constexpr uint8_t DW_UT_partial = 0x03;
inline constexpr uint8_t DW_UT_skeleton = 0x04;
inline constexpr uint8_t DW_UT_split_compile = 0x05;
inline constexpr uint8_t DW_UT_split_type = 0x06;

// Tags.
inline constexpr uint16_t DW_TAG_array_type = 0x01;
inline constexpr uint16_t DW_TAG_class_type = 0x02;
inline constexpr uint16_t DW_TAG_enumeration_type = 0x04;
inline constexpr uint16_t DW_TAG_formal_parameter = 0x05;
inline constexpr uint16_t DW_TAG_lexical_block = 0x0b;
inline constexpr uint16_t DW_TAG_member = 0x0d;
inline constexpr uint16_t DW_TAG_pointer_type = 0x0f;
inline constexpr uint16_t DW_TAG_reference_type = 0x10;
inline constexpr uint16_t DW_TAG_compile_unit = 0x11;
inline constexpr uint16_t DW_TAG_structure_type = 0x13;
inline constexpr uint16_t DW_TAG_subroutine_type = 0x15;
inline constexpr uint16_t DW_TAG_typedef = 0x16;
inline constexpr uint16_t DW_TAG_union_type = 0x17;
inline constexpr uint16_t DW_TAG_inlined_subroutine = 0x1d;
inline constexpr uint16_t DW_TAG_base_type = 0x24;
inline constexpr uint16_t DW_TAG_const_type = 0x26;
inline constexpr uint16_t DW_TAG_subprogram = 0x2e;
inline constexpr uint16_t DW_TAG_template_type_parameter = 0x2f;
inline constexpr uint16_t DW_TAG_template_value_parameter = 0x30;
inline constexpr uint16_t DW_TAG_variable = 0x34;
inline constexpr uint16_t DW_TAG_volatile_type = 0x35;
inline constexpr uint16_t DW_TAG_namespace = 0x39;
inline constexpr uint16_t DW_TAG_partial_unit = 0x3c;
inline constexpr uint16_t DW_TAG_imported_unit = 0x3d;
inline constexpr uint16_t DW_TAG_rvalue_reference_type = 0x42;
inline constexpr uint16_t DW_TAG_type_unit = 0x41;
inline constexpr uint16_t DW_TAG_call_site = 0x48;
inline constexpr uint16_t DW_TAG_skeleton_unit = 0x4a;
inline constexpr uint16_t DW_TAG_GNU_template_parameter_pack = 0x4107;
inline constexpr uint16_t DW_TAG_GNU_formal_parameter_pack = 0x4108;
inline constexpr uint16_t DW_TAG_GNU_call_site = 0x4109;

// Attributes.
inline constexpr uint16_t DW_AT_sibling = 0x01;
inline constexpr uint16_t DW_AT_name = 0x03;
inline constexpr uint16_t DW_AT_stmt_list = 0x10;
inline constexpr uint16_t DW_AT_low_pc = 0x11;
inline constexpr uint16_t DW_AT_high_pc = 0x12;
inline constexpr uint16_t DW_AT_comp_dir = 0x1b;
inline constexpr uint16_t DW_AT_abstract_origin = 0x31;
inline constexpr uint16_t DW_AT_declaration = 0x3c;
inline constexpr uint16_t DW_AT_specification = 0x47;
inline constexpr uint16_t DW_AT_import = 0x18;
inline constexpr uint16_t DW_AT_ranges = 0x55;
inline constexpr uint16_t DW_AT_call_column = 0x57;
inline constexpr uint16_t DW_AT_call_file = 0x58;
inline constexpr uint16_t DW_AT_call_line = 0x59;
inline constexpr uint16_t DW_AT_linkage_name = 0x6e;
inline constexpr uint16_t DW_AT_str_offsets_base = 0x72;
inline constexpr uint16_t DW_AT_addr_base = 0x73;
inline constexpr uint16_t DW_AT_rnglists_base = 0x74;
inline constexpr uint16_t DW_AT_dwo_name = 0x76;
inline constexpr uint16_t DW_AT_loclists_base = 0x8c;
inline constexpr uint16_t DW_AT_MIPS_linkage_name = 0x2007;
inline constexpr uint16_t DW_AT_GNU_dwo_name = 0x2130;
inline constexpr uint16_t DW_AT_GNU_dwo_id = 0x2131;
inline constexpr uint16_t DW_AT_GNU_ranges_base = 0x2132;
inline constexpr uint16_t DW_AT_GNU_addr_base = 0x2133;

// Forms.
inline constexpr uint16_t DW_FORM_addr = 0x01;
inline constexpr uint16_t DW_FORM_block2 = 0x03;
inline constexpr uint16_t DW_FORM_block4 = 0x04;
inline constexpr uint16_t DW_FORM_data2 = 0x05;
inline constexpr uint16_t DW_FORM_data4 = 0x06;
inline constexpr uint16_t DW_FORM_data8 = 0x07;
inline constexpr uint16_t DW_FORM_string = 0x08;
inline constexpr uint16_t DW_FORM_block = 0x09;
inline constexpr uint16_t DW_FORM_block1 = 0x0a;
inline constexpr uint16_t DW_FORM_data1 = 0x0b;
inline constexpr uint16_t DW_FORM_flag = 0x0c;
inline constexpr uint16_t DW_FORM_sdata = 0x0d;
inline constexpr uint16_t DW_FORM_strp = 0x0e;
inline constexpr uint16_t DW_FORM_udata = 0x0f;
inline constexpr uint16_t DW_FORM_ref_addr = 0x10;
inline constexpr uint16_t DW_FORM_ref1 = 0x11;
inline constexpr uint16_t DW_FORM_ref2 = 0x12;
inline constexpr uint16_t DW_FORM_ref4 = 0x13;
inline constexpr uint16_t DW_FORM_ref8 = 0x14;
inline constexpr uint16_t DW_FORM_ref_udata = 0x15;
inline constexpr uint16_t DW_FORM_indirect = 0x16;
inline constexpr uint16_t DW_FORM_sec_offset = 0x17;
inline constexpr uint16_t DW_FORM_exprloc = 0x18;
inline constexpr uint16_t DW_FORM_flag_present = 0x19;
inline constexpr uint16_t DW_FORM_strx = 0x1a;
inline constexpr uint16_t DW_FORM_addrx = 0x1b;
inline constexpr uint16_t DW_FORM_ref_sup4 = 0x1c;
inline constexpr uint16_t DW_FORM_strp_sup = 0x1d;
inline constexpr uint16_t DW_FORM_data16 = 0x1e;
inline constexpr uint16_t DW_FORM_line_strp = 0x1f;
inline constexpr uint16_t DW_FORM_ref_sig8 = 0x20;
inline constexpr uint16_t DW_FORM_implicit_const = 0x21;
inline constexpr uint16_t DW_FORM_loclistx = 0x22;
inline constexpr uint16_t DW_FORM_rnglistx = 0x23;
inline constexpr uint16_t DW_FORM_ref_sup8 = 0x24;
inline constexpr uint16_t DW_FORM_strx1 = 0x25;
inline constexpr uint16_t DW_FORM_strx2 = 0x26;
inline constexpr uint16_t DW_FORM_strx3 = 0x27;
inline constexpr uint16_t DW_FORM_strx4 = 0x28;
inline constexpr uint16_t DW_FORM_addrx1 = 0x29;
inline constexpr uint16_t DW_FORM_addrx2 = 0x2a;
inline constexpr uint16_t DW_FORM_addrx3 = 0x2b;
inline constexpr uint16_t DW_FORM_addrx4 = 0x2c;
inline constexpr uint16_t DW_FORM_GNU_addr_index = 0x1f01;
inline constexpr uint16_t DW_FORM_GNU_str_index = 0x1f02;
inline constexpr uint16_t DW_FORM_GNU_ref_alt = 0x1f20;
inline constexpr uint16_t DW_FORM_GNU_strp_alt = 0x1f21;

// Range list entries (.debug_rnglists, DWARF 5 7.25).
inline constexpr uint8_t DW_RLE_end_of_list = 0x00;
inline constexpr uint8_t DW_RLE_base_addressx = 0x01;
inline constexpr uint8_t DW_RLE_startx_endx = 0x02;
inline constexpr uint8_t DW_RLE_startx_length = 0x03;
inline constexpr uint8_t DW_RLE_offset_pair = 0x04;
inline constexpr uint8_t DW_RLE_base_address = 0x05;
inline constexpr uint8_t DW_RLE_start_end = 0x06;
inline constexpr uint8_t DW_RLE_start_length = 0x07;

// Line programs (DWARF 5 6.2.5).
inline constexpr uint8_t DW_LNS_copy = 0x01;
inline constexpr uint8_t DW_LNS_advance_pc = 0x02;
inline constexpr uint8_t DW_LNS_advance_line = 0x03;
inline constexpr uint8_t DW_LNS_set_file = 0x04;
inline constexpr uint8_t DW_LNS_set_column = 0x05;
inline constexpr uint8_t DW_LNS_negate_stmt = 0x06;
inline constexpr uint8_t DW_LNS_set_basic_block = 0x07;
inline constexpr uint8_t DW_LNS_const_add_pc = 0x08;
inline constexpr uint8_t DW_LNS_fixed_advance_pc = 0x09;
inline constexpr uint8_t DW_LNS_set_prologue_end = 0x0a;
inline constexpr uint8_t DW_LNS_set_epilogue_begin = 0x0b;
inline constexpr uint8_t DW_LNS_set_isa = 0x0c;
inline constexpr uint8_t DW_LNE_end_sequence = 0x01;
inline constexpr uint8_t DW_LNE_set_address = 0x02;
inline constexpr uint8_t DW_LNE_define_file = 0x03;
inline constexpr uint8_t DW_LNE_set_discriminator = 0x04;
inline constexpr uint16_t DW_LNCT_path = 0x1;
inline constexpr uint16_t DW_LNCT_directory_index = 0x2;

// Package index section ids (.debug_cu_index, .debug_tu_index): DWARF 5 7.3.5.3, and the GNU
// version 2 of DWARF 4 packages (which has TYPES where DWARF 5 has nothing).
inline constexpr uint32_t DW_SECT_INFO = 1;
inline constexpr uint32_t DW_SECT_V2_TYPES = 2;
inline constexpr uint32_t DW_SECT_ABBREV = 3;
inline constexpr uint32_t DW_SECT_LINE = 4;
inline constexpr uint32_t DW_SECT_V2_LOC = 5;
inline constexpr uint32_t DW_SECT_LOCLISTS = 5;
inline constexpr uint32_t DW_SECT_STR_OFFSETS = 6;
inline constexpr uint32_t DW_SECT_MACRO = 7;
inline constexpr uint32_t DW_SECT_RNGLISTS = 8;

}  // namespace jitsym::dwarf

#endif  // JITSYM_DAEMON_DWARF_CONSTANTS_H_

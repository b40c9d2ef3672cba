/*
** crc32c.h: CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected), the checksum TFRecord
** framing uses (crc32c_), and TFRecord's masked form of it. No library on the machines
** provides it, so it is a byte-at-a-time table here: tfevents files are small.
*/
#ifndef PODSIM_CRC32C_H
#define PODSIM_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of len bytes appended to data whose CRC-32C was crc (0 for none yet):
** crc32c_extend(0, "123456789", 9) == 0xE3069283 (RFC 3720's check value). */
uint32_t crc32c_extend(uint32_t crc, const void *data, size_t len);
/* TFRecord's masked CRC (tensorflow/core/lib/hash/crc32c.h Mask): rotated right by 15 and
** offset, so that a CRC stored inside CRC'd data does not checksum to a constant. */
uint32_t crc32c_mask(uint32_t crc);

#endif

// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice UTC calendar conversions (days since 1970-01-01 <-> year/month/day), after the
/// civil-from-days algorithm. Withdrawal queues are keyed by the UTC date a claim becomes due.
library DateLib {
    uint256 internal constant SECONDS_PER_DAY = 86400;

    function daysFromDate(uint256 year, uint256 month, uint256 day) internal pure returns (uint256) {
        require(year >= 1970 && month >= 1 && month <= 12 && day >= 1 && day <= 31, "DateLib: bad date");
        int256 y = int256(year);
        int256 m = int256(month);
        int256 d = int256(day);
        int256 days_ = d - 32075 + (1461 * (y + 4800 + (m - 14) / 12)) / 4
            + (367 * (m - 2 - ((m - 14) / 12) * 12)) / 12
            - (3 * ((y + 4900 + (m - 14) / 12) / 100)) / 4 - 2440588;
        return uint256(days_);
    }

    function daysToDate(uint256 days_) internal pure returns (uint256 year, uint256 month, uint256 day) {
        int256 l = int256(days_) + 68569 + 2440588;
        int256 n = (4 * l) / 146097;
        l = l - (146097 * n + 3) / 4;
        int256 y = (4000 * (l + 1)) / 1461001;
        l = l - (1461 * y) / 4 + 31;
        int256 m = (80 * l) / 2447;
        int256 d = l - (2447 * m) / 80;
        l = m / 11;
        m = m + 2 - 12 * l;
        y = 100 * (n - 49) + y + l;
        return (uint256(y), uint256(m), uint256(d));
    }
}
